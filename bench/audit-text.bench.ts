/**
 * The writer's serialiser (queuedAudit, run for every proxied request), derived from the column
 * definition, against the hand-written one it replaced: same text checked first, then
 * alternating timed rounds over 200k records with plain timers.
 * `node dist/bench/audit-text.bench.js` runs it alone.
 */
import { AuditRecord, queuedAudit } from '../src/core/audit-record/audit-record';
import { AuditSanitizer } from '../src/core/audit-record/audit-sanitizer';
import { handwrittenQueuedAudit } from './fixtures/audit-text-handwritten';

const RECORDS = 200_000;
const ROUNDS = 20;

function record(i: number): AuditRecord {
  return {
    id: `aud_${i.toString(16).padStart(24, '0')}`,
    ts: 1_764_000_000_000 + i,
    orgId: 'org_default',
    source: 'proxy',
    kind: 'decision',
    traceId: `trace-${i}`,
    agentId: 'agent_1',
    agentName: 'reader',
    trustTier: 'verified',
    action: 'read:api/items',
    method: 'GET',
    path: `/api/items/${i}`,
    decision: i % 3 === 0 ? 'deny' : 'allow',
    enforced: true,
    rateLimited: false,
    policyName: 'allow-reads',
    rule: 'allow-reads#0',
    reason: 'reads are allowed',
    decisionLatencyMs: 0.0123 + i / 1e6,
    latencyMs: 0.5 + i / 1000,
    status: 200,
    upstreamStatus: i % 2 === 0 ? null : 200,
    delegationChain: i % 5 === 0 ? ['agent_0', 'agent_1'] : null,
    input: {
      agent: { id: 'agent_1', name: 'reader', trust_tier: 'verified', tags: ['crm'], org: 'org_default' },
      action: 'read:api/items',
      resource: 'api/items',
      plugin: 'http',
      function: 'read',
      args: { path: `/api/items/${i}`, method: 'GET', limit: '10' },
      context: {},
      delegation: { depth: 1, chain: [] },
    },
    details: null,
  };
}

/** Nanoseconds per record; the text is read (flattened) as the queue would. */
function timeRound(records: AuditRecord[], serialise: (record: AuditRecord) => string): number {
  let sink = 0;
  const start = process.hrtime.bigint();
  for (const entry of records) {
    const text = serialise(entry);
    sink += text.charCodeAt(text.length >> 1);
  }
  const ns = Number(process.hrtime.bigint() - start) / records.length;
  return sink < 0 ? -ns : ns;
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
}

export function runAuditTextBench(): { handwrittenNs: number; derivedNs: number } {
  const clean = new AuditSanitizer(['password', 'token', 'secret']);
  const records = Array.from({ length: RECORDS }, (_, i) => record(i));
  const subjects = { handwritten: (r: AuditRecord) => handwrittenQueuedAudit(r, clean), derived: (r: AuditRecord) => queuedAudit(r, clean) };
  for (const entry of records) {
    if (subjects.derived(entry) !== subjects.handwritten(entry)) throw new Error(`texts differ for ${entry.id}`);
  }
  const times: Record<keyof typeof subjects, number[]> = { handwritten: [], derived: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (['handwritten', 'derived'] as const) : (['derived', 'handwritten'] as const);
    for (const name of order) times[name].push(timeRound(records, subjects[name]));
  }
  return { handwrittenNs: median(times.handwritten), derivedNs: median(times.derived) };
}

if (require.main === module) {
  const { handwrittenNs, derivedNs } = runAuditTextBench();
  console.log(`queuedAudit over ${RECORDS} records, median of ${ROUNDS} alternating rounds: hand-written ${handwrittenNs.toFixed(0)} ns, derived ${derivedNs.toFixed(0)} ns (${((derivedNs / handwrittenNs - 1) * 100).toFixed(1)}%)`);
}
