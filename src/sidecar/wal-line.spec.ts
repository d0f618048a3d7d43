import { AuditRecord, roundMs } from '../core/audit-record/audit-record';
import { AuditSanitizer } from '../core/audit-record/audit-sanitizer';
import { jsonNumber, jsonString } from '../core/common/json-text';
import { walLine } from './wal-line';

function record(overrides: Partial<AuditRecord> = {}): AuditRecord {
  return {
    id: 'aud_1',
    ts: 1_764_000_000_000,
    orgId: 'org_a',
    source: 'sidecar',
    kind: 'decision',
    traceId: 'trace',
    agentId: 'agent_1',
    agentName: 'one',
    trustTier: 'verified',
    action: 'read:docs/a',
    method: null,
    path: null,
    decision: 'deny',
    enforced: true,
    rateLimited: false,
    policyName: 'p',
    rule: 'r',
    reason: 'no',
    decisionLatencyMs: 0.012345678,
    latencyMs: 1.5,
    status: 403,
    upstreamStatus: null,
    delegationChain: null,
    input: { args: {} },
    details: null,
    ...overrides,
  };
}

/** What the line must parse to: the record as JSON.stringify writes it, numbered, with its input text. */
function expected(seq: number, entry: AuditRecord, inputJson: string): unknown {
  const { input: _input, ...fields } = entry;
  const latencies = { decisionLatencyMs: roundMs(entry.decisionLatencyMs), latencyMs: roundMs(entry.latencyMs) };
  return { seq, ...(JSON.parse(JSON.stringify({ ...fields, ...latencies })) as object), input: JSON.parse(inputJson) as unknown };
}

const clean = new AuditSanitizer(['password']);

describe('walLine', () => {
  it('parses to the record as JSON.stringify writes it, the number first and one newline at the end', () => {
    const entry = record();
    const line = walLine(7, entry, '{"args":{}}', clean);
    expect(line.startsWith('{"seq":7,')).toBe(true);
    expect(line.endsWith('}\n')).toBe(true);
    expect(line.indexOf('\n')).toBe(line.length - 1);
    expect(JSON.parse(line)).toEqual(expected(7, entry, '{"args":{}}'));
  });

  it('escapes what JSON must escape and keeps every other character', () => {
    const entry = record({
      agentName: 'quote " backslash \\ tab \t line\nbreak',
      reason: 'pair 😀, accents éü, line sep \u2028',
      action: 'read:"x"',
      traceId: null,
      method: 'GET',
      path: '/a/b?c',
      delegationChain: ['agent_0', 'agent_1'],
      details: { before: { a: [1, 'two'] } },
      decisionLatencyMs: Number.NaN,
      latencyMs: Number.POSITIVE_INFINITY,
      upstreamStatus: 502,
    });
    const line = walLine(1, entry, 'null', clean);
    expect(line.indexOf('\n')).toBe(line.length - 1);
    expect(JSON.parse(line)).toEqual(expected(1, entry, 'null'));
  });

  it('cleans its texts as the gateway cleans those it stores: bounded, no NUL, no lone surrogate', () => {
    const entry = record({ action: `read:${'a'.repeat(5000)}`, agentName: 'nul \u0000 here', reason: 'lone \ud800 surrogate', details: { note: 'b'.repeat(3000), password: 'hunter2' } });
    const parsed = JSON.parse(walLine(3, entry, 'null', clean)) as Record<string, unknown>;
    expect(parsed.action).toBe(`read:${'a'.repeat(2043)}…[truncated]`);
    expect(parsed.agentName).toBe('nul \uFFFD here');
    expect(parsed.reason).toBe('lone \uFFFD surrogate');
    expect(parsed.details).toEqual({ note: `${'b'.repeat(2048)}…[truncated]`, password: '[redacted]' });
  });

  it('leaves out an id the record does not have, as JSON.stringify does', () => {
    const { id: _id, ...withoutId } = record();
    expect(JSON.parse(walLine(2, withoutId, '{}', clean))).not.toHaveProperty('id');
  });

  it('writes strings and numbers as JSON.stringify does', () => {
    for (const value of ['', 'plain', 'a"b', 'a\\b', '\u001f', '\ud83d\ude00', '\udc00', null]) expect(jsonString(value)).toBe(JSON.stringify(value));
    for (const value of [0, -0, 1.5, 1e21, 1e-7, Number.NaN, Number.NEGATIVE_INFINITY, null]) expect(jsonNumber(value)).toBe(JSON.stringify(value));
  });
});
