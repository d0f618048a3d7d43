import 'reflect-metadata';
import { AppError } from '../../core/common/app-error';
import { createValidationPipe } from '../../core/common/validation';
import { AuditIngestDto } from './bundles.dto';
import { ingestBatchOf } from './ingest-batch';

function entry(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    seq: 7,
    id: 'aud_0123456789abcdef01234567',
    ts: 1_764_000_000_000,
    orgId: 'org_edge',
    source: 'sidecar',
    kind: 'decision',
    traceId: 'trace-1',
    agentId: 'agent_1',
    agentName: 'one',
    trustTier: 'verified',
    action: 'read:docs/a',
    method: null,
    path: null,
    decision: 'deny',
    enforced: true,
    rateLimited: false,
    policyName: 'no-etc',
    rule: 'etc',
    reason: 'No system files',
    decisionLatencyMs: 0.012,
    latencyMs: 0.2,
    status: 403,
    upstreamStatus: null,
    delegationChain: ['agent_0'],
    input: { args: { path: '/etc/passwd' } },
    ...overrides,
  };
}

const batch = (...entries: unknown[]) => ({ sidecarId: 'sc_edge-1', entries });
const without = (field: string) => {
  const copy = entry();
  delete copy[field];
  return copy;
};

/** What the global ValidationPipe makes of a body declared as AuditIngestDto: the fields it names, or null when it takes it. */
async function pipeVerdict(body: unknown): Promise<string[] | null> {
  try {
    await createValidationPipe().transform(body, { type: 'body', metatype: AuditIngestDto });
    return null;
  } catch (error) {
    return fieldsOf(error);
  }
}

function handVerdict(body: unknown): string[] | null {
  try {
    ingestBatchOf(body);
    return null;
  } catch (error) {
    return fieldsOf(error);
  }
}

function fieldsOf(error: unknown): string[] {
  if (!(error instanceof AppError)) throw error;
  expect(error.status).toBe(400);
  const fields = (error.details as { fields?: Array<{ field: string }> }).fields ?? [];
  return [...new Set(fields.map((problem) => problem.field))].sort();
}

describe('ingestBatchOf', () => {
  const accepted: Array<[string, unknown]> = [
    ['a full entry', batch(entry())],
    ['the least an entry needs', batch({ seq: 1, id: 'aud_x', ts: 0, action: 'a', decision: 'allow', enforced: false, rateLimited: false })],
    ['nulls where a field is optional', batch(entry({ traceId: null, kind: null, delegationChain: null, status: null, latencyMs: null, input: null, details: null }))],
    ['an outcome with details', batch(entry({ kind: 'outcome', details: { eventId: 'ev_1', nested: { any: ['thing'] } } }))],
    ['no entries', batch()],
    ['the last millisecond of the year 9999', batch(entry({ ts: 253_402_300_799_999 }))],
    ['texts at their limits', batch(entry({ action: 'a'.repeat(65536), traceId: 't'.repeat(4096), reason: 'r'.repeat(65536) }))],
  ];

  const refused: Array<[string, unknown]> = [
    ['seq 0', batch(entry({ seq: 0 }))],
    ['a fractional seq', batch(entry({ seq: 1.5 }))],
    ['a seq given as text', batch(entry({ seq: '7' }))],
    ['a missing seq', batch(without('seq'))],
    ['an id that is not an audit id', batch(entry({ id: 'agent_1' }))],
    ['a negative ts', batch(entry({ ts: -1 }))],
    // The audit trail partitions by day, named by the date: a year past 9999 has no such name.
    ['a ts past the year 9999', batch(entry({ ts: 253_402_300_800_000 }))],
    ['a ts past what a date can hold', batch(entry({ ts: 9_000_000_000_000_000 }))],
    ['an unknown kind', batch(entry({ kind: 'admin' }))],
    ['an action over 64 KiB', batch(entry({ action: 'a'.repeat(65537) }))],
    ['a missing action', batch(without('action'))],
    ['a trace id over 4 KiB', batch(entry({ traceId: 't'.repeat(4097) }))],
    ['a numeric agent name', batch(entry({ agentName: 5 }))],
    ['an unknown decision', batch(entry({ decision: 'maybe' }))],
    ['enforced as text', batch(entry({ enforced: 'true' }))],
    ['a missing rateLimited', batch(without('rateLimited'))],
    ['a latency as text', batch(entry({ latencyMs: '0.2' }))],
    ['a fractional status', batch(entry({ status: 200.5 }))],
    ['a chain of numbers', batch(entry({ delegationChain: [1, 2] }))],
    ['an unknown entry field', batch(entry({ extra: true }))],
    ['an unknown top-level field', { ...batch(entry()), extra: 1 }],
    ['a bad sidecar id', { sidecarId: 'sc edge', entries: [] }],
    ['no sidecar id', { entries: [] }],
    ['more than 1000 entries', batch(...Array.from({ length: 1001 }, (_, index) => entry({ seq: index + 1 })))],
    ['a second entry wrong', batch(entry(), entry({ seq: 8, decision: 'nope' }))],
  ];

  it.each(accepted)('takes %s, as the ValidationPipe does', async (_label, body) => {
    expect(await pipeVerdict(body)).toBeNull();
    expect(handVerdict(body)).toBeNull();
    expect(ingestBatchOf(body)).toEqual(body);
  });

  it.each(refused)('refuses %s with a 400 naming the same fields as the ValidationPipe', async (_label, body) => {
    const fields = await pipeVerdict(body);
    expect(fields).not.toBeNull();
    expect(handVerdict(body)).toEqual(fields);
  });

  it('refuses entries that are not an array, naming entries (the ValidationPipe also checks the object as an entry)', async () => {
    const body = { sidecarId: 'sc_edge-1', entries: {} };
    expect(await pipeVerdict(body)).toContain('entries');
    expect(handVerdict(body)).toEqual(['entries']);
  });

  it('names each problem in its message', () => {
    expect(() => ingestBatchOf(batch(entry({ seq: 0 })))).toThrow('entries.0.seq must not be less than 1');
    expect(() => ingestBatchOf(batch(entry({ extra: 1 })))).toThrow('unknown field entries.0.extra');
  });
});
