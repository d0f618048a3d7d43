import { AuditRecord, queuedAudit } from './audit-record';
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

describe('queuedAudit', () => {
  it('stores the input compacted and redacted as JSON text, leaving the columns as they were', () => {
    const queued = queuedAudit(record(), clean);
    expect(JSON.parse(queued.input!)).toEqual({
      resource: 'api/items',
      plugin: 'http',
      function: 'read',
      args: { path: '/api/items', method: 'GET', password: REDACTED, limit: '10' },
      agent_tags: ['crm'],
    });
    expect(queued).toMatchObject({ orgId: 'org_default', agentId: 'agent_1', action: 'read:api/items', decision: 'allow', latencyMs: 0.5, details: null, delegationChain: null });
  });

  it('serialises details and the delegation chain, and cleans text columns', () => {
    const queued = queuedAudit(
      record({ kind: 'admin', details: { actor: 'adm_1', token: 'secret-value', next: { name: 'x' } }, delegationChain: ['agent_0', 'agent_1'], reason: 'bad\u0000byte' }),
      clean,
    );
    expect(JSON.parse(queued.details!)).toEqual({ actor: 'adm_1', token: REDACTED, next: { name: 'x' } });
    expect(queued.delegationChain).toBe('["agent_0","agent_1"]');
    expect(queued.reason).toBe('bad\uFFFDbyte');
  });

  it('holds only strings, numbers, booleans and nulls: a flat record for the audit worker', () => {
    const queued = queuedAudit(record({ details: { nested: { deep: [1, 2] } } }), clean);
    for (const value of Object.values(queued)) expect(['string', 'number', 'boolean']).toContain(value === null ? 'string' : typeof value);
  });
});
