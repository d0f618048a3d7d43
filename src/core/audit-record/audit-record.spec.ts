import { chainHash } from '../../gateway/audit/audit-chain';
import { AUDIT_ENTRY_COLUMNS, copyValue, entryText, jsonRow, readAudit, StoredAudit } from './audit-entry';
import { AuditRecord, queuedAudit, queuedParts } from './audit-record';
import { chainRow, copyLine } from '../../gateway/audit/audit-rows';
import { AuditSanitizer, REDACTED } from './audit-sanitizer';

const clean = new AuditSanitizer(['password', 'token']);

function record(overrides: Partial<AuditRecord> = {}): AuditRecord {
  return {
    ts: Date.UTC(2026, 10, 22, 12),
    orgId: 'org_default',
    source: 'proxy',
    kind: 'decision',
    traceId: 'trace-1',
    agentId: 'agent_1',
    agentName: 'reader',
    trustTier: 'verified',
    action: 'read:api/items',
    method: 'GET',
    path: '/api/items',
    decision: 'allow',
    enforced: true,
    rateLimited: false,
    policyName: 'allow-reads',
    rule: 'allow-reads#0',
    reason: 'reads are allowed',
    decisionLatencyMs: 0.0125,
    latencyMs: 0.5,
    status: 200,
    upstreamStatus: 200,
    delegationChain: null,
    input: {
      agent: { id: 'agent_1', name: 'reader', trust_tier: 'verified', tags: ['crm'], org: 'org_default' },
      action: 'read:api/items',
      resource: 'api/items',
      plugin: 'http',
      function: 'read',
      args: { path: '/api/items', method: 'GET', password: 'hunter2', limit: '10' },
      context: {},
      delegation: { depth: 1, chain: [] },
    },
    details: null,
    ...overrides,
  };
}

/** The queued record's columns by name, values as stored (null for `\\N`). */
function columns(queued: string): Record<string, string | null> {
  const { ts, orgIdText, content } = queuedParts(queued);
  const fields = [String(ts), orgIdText, ...content.split('\t')];
  const names = ['ts', 'org_id', ...AUDIT_ENTRY_COLUMNS.slice(4, 26).map(({ column }) => column)];
  expect(fields).toHaveLength(names.length);
  return Object.fromEntries(names.map((name, i) => [name, copyValue(fields[i])]));
}

describe('queuedAudit', () => {
  it('stores the input compacted and redacted as JSON text, leaving the columns as they were', () => {
    const queued = columns(queuedAudit(record(), clean));
    expect(JSON.parse(queued.input!)).toEqual({
      resource: 'api/items',
      plugin: 'http',
      function: 'read',
      args: { path: '/api/items', method: 'GET', password: REDACTED, limit: '10' },
      agent_tags: ['crm'],
    });
    expect(queued).toMatchObject({ org_id: 'org_default', agent_id: 'agent_1', action: 'read:api/items', decision: 'allow', latency_ms: '0.5', details: null, delegation_chain: null });
  });

  it('serialises details and the delegation chain, and cleans text columns', () => {
    const queued = columns(
      queuedAudit(
        record({ kind: 'admin', details: { actor: 'adm_1', token: 'secret-value', next: { name: 'x' } }, delegationChain: ['agent_0', 'agent_1'], reason: 'bad\u0000byte' }),
        clean,
      ),
    );
    expect(JSON.parse(queued.details!)).toEqual({ actor: 'adm_1', token: REDACTED, next: { name: 'x' } });
    expect(queued.delegation_chain).toBe('["agent_0","agent_1"]');
    expect(queued.reason).toBe('bad\uFFFDbyte');
  });

  it('keeps tabs, newlines and backslashes inside their column', () => {
    const queued = columns(queuedAudit(record({ orgId: 'org\tx', reason: 'a\tb\nc\r\\d', path: '/p\\t' }), clean));
    expect(queued).toMatchObject({ org_id: 'org\tx', reason: 'a\tb\nc\r\\d', path: '/p\\t', rule: 'allow-reads#0' });
  });

  it('rounds latencies to the microsecond', () => {
    const queued = columns(queuedAudit(record({ decisionLatencyMs: 0.0123456, latencyMs: Number.NaN }), clean));
    expect(queued).toMatchObject({ decision_latency_ms: '0.012', latency_ms: null });
  });
});

describe('chainRow', () => {
  const head = () => ({ seq: 41, hash: 'a'.repeat(64) });

  /** The entry as the verifier reads it back (`readAudit`) from the columns of a row built from `text`, as the driver returns them. */
  function stored(text: string): StoredAudit {
    const row = JSON.parse(jsonRow({ text, prevHash: '', hash: '' })) as Record<string, unknown>;
    const read = (value: unknown, type: string) => {
      if (value === null) return null;
      if (type === 'json') return JSON.stringify(value);
      if (type === 'timestamptz') return new Date(value as string);
      return type === 'bigint' ? String(value) : value;
    };
    const selected = Object.fromEntries(AUDIT_ENTRY_COLUMNS.map(({ field, column, type }) => [field, read(row[column], type)]));
    return readAudit(selected, AUDIT_ENTRY_COLUMNS.map(({ field }) => field));
  }

  it('numbers and hashes the entry after the head, and moves the head', () => {
    const chainHead = head();
    const chained = chainRow(queuedParts(queuedAudit(record(), clean)), chainHead);
    const entry = stored(chained.text);
    expect(entry).toMatchObject({ seq: 42, orgId: 'org_default', ts: Date.UTC(2026, 10, 22, 12), status: 200, enforced: true, rateLimited: false, latencyMs: 0.5 });
    expect(entry.id).toMatch(/^aud_[0-9a-f]{24}$/);
    expect(chained.prevHash).toBe('a'.repeat(64));
    expect(chained.hash).toBe(chainHash(chained.prevHash, entry));
    expect(chainHead).toEqual({ seq: 42, hash: chained.hash });
    expect(copyLine(chained)).toBe(`${chained.text}\t${'a'.repeat(64)}\t${chained.hash}\n`);
  });

  it('builds the text the verifier rebuilds from the stored columns, escapes included', () => {
    const queued = queuedAudit(record({ orgId: 'org\\1', reason: 'tab\there\nand \\ back', delegationChain: ['a\tb'], details: { note: 'x\ny' } }), clean);
    const chained = chainRow(queuedParts(queued), head());
    expect(entryText(stored(chained.text))).toBe(chained.text);
    expect(stored(chained.text)).toMatchObject({ orgId: 'org\\1', reason: 'tab\there\nand \\ back', delegationChain: '["a\\tb"]', details: '{"note":"x\\ny"}' });
  });

  it('leaves the payloads out of the retry of a refused batch', () => {
    const entry = stored(chainRow(queuedParts(queuedAudit(record({ details: { a: 1 } }), clean)), head(), true).text);
    expect(entry).toMatchObject({ input: null, details: '{"unstorable":true}', action: 'read:api/items', status: 200 });
  });
});
