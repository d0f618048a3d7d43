/**
 * What a bounded in-memory structure costs per operation as its history grows (docs/performance.md:
 * that cost may not grow with history). Each subject takes WINDOWS windows of WINDOW operations
 * with distinct keys: the first fills it to its bound, every later one is at the bound. The windows
 * at the bound are the rounds of `extra.perRound`, so the trend rule of bench/report.ts judges
 * them, and the target below compares the last of them with the first window, below the bound. A Map trimmed by deleting
 * `keys().next()` walked the holes its deletions left: 20-150 times slower per insert at the
 * bound. `node dist/bench/run.js bounded` runs it alone.
 */
import pino from 'pino';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { AuditRecord } from '../src/core/audit-record/audit-record';
import { DecisionEvents } from '../src/core/decision/decision-events';
import { MAX_REMEMBERED_DECISIONS, RecentDecisions } from '../src/core/decision/recent-decisions';
import { SessionStore } from '../src/core/decision/session-store';
import type { Decision } from '../src/core/policy-engine/types';
import { perRound, type BenchReport, type BenchRow, type BenchTarget } from './report';

const WINDOWS = 10;
const START_MS = Date.UTC(2026, 0, 1);
/**
 * The last window, at the bound, keeps at least this share of the first window's throughput, below
 * it: an insert at the bound also ends the oldest entry (two deletions for a session), so it may
 * cost a few times as much, never the 20-150 times of a walk over history.
 */
const MIN_AT_BOUND = 1 / 3;

function decisionEntry(index: number): AuditRecord & { id: string } {
  return {
    id: `decision-${index}`,
    ts: START_MS + index,
    orgId: 'org-1',
    source: 'check',
    kind: 'decision',
    traceId: null,
    agentId: 'agent-1',
    agentName: null,
    trustTier: null,
    action: 'call',
    method: null,
    path: null,
    decision: 'allow',
    enforced: true,
    rateLimited: false,
    policyName: null,
    rule: null,
    reason: null,
    decisionLatencyMs: null,
    latencyMs: null,
    status: null,
    upstreamStatus: null,
    delegationChain: null,
    input: { plugin: 'crm', function: 'read' },
    details: null,
  };
}

/** Operations per second, window by window, of `operate(index)` over WINDOWS * window indices. */
function windows(window: number, operate: (index: number) => void): number[] {
  const rates: number[] = [];
  for (let w = 0; w < WINDOWS; w += 1) {
    const started = performance.now();
    for (let index = w * window; index < (w + 1) * window; index += 1) operate(index);
    rates.push(window / ((performance.now() - started) / 1000));
  }
  return rates;
}

/** Heap in use after a full collection (`--expose-gc` turned on at run time). */
function retainedHeapBytes(): number {
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed;
}

/** What the structure keeps alive per entry at its bound, measured after the last window. */
let recentBytesPerEntry: number | undefined;

function recentDecisions(): number[] {
  const before = retainedHeapBytes();
  const events = new DecisionEvents(pino({ level: 'silent' }));
  const recent = new RecentDecisions(events);
  const decision = { allowed: true } as unknown as Decision;
  const rates = windows(MAX_REMEMBERED_DECISIONS, (index) => events.emit({ entry: decisionEntry(index), decision }));
  recentBytesPerEntry = Math.round((retainedHeapBytes() - before) / MAX_REMEMBERED_DECISIONS);
  recent.onModuleDestroy();
  return rates;
}

function sessionStore(): number[] {
  const bound = 50_000;
  // Each agent keeps its default bound (64): 1,000 agents hold more than the organization's bound.
  const store = new SessionStore({ maxSessionsPerOrg: bound });
  return windows(bound, (index) => store.remember({ orgId: 'org-1', agentId: `agent-${index % 1000}`, sessionId: `s-${index}` }, 'read:x', undefined, START_MS + index));
}

function rowOf(subject: string, rates: number[]): BenchRow {
  const total = rates.reduce((sum, rate) => sum + 1 / rate, 0);
  const [fill, ...atBound] = rates;
  return { subject, opsPerSec: Math.round(rates.length / total), extra: { fillPerSec: Math.round(fill), perRound: perRound(atBound) } };
}

function targetOf(subject: string, rates: number[]): BenchTarget {
  const ratio = rates[rates.length - 1] / rates[0];
  return {
    description: `"${subject}": an insert at the bound costs no more than ${Math.round(1 / MIN_AT_BOUND)}x one below it`,
    measured: `last window ${(ratio * 100).toFixed(0)}% of the first's throughput`,
    pass: ratio >= MIN_AT_BOUND,
  };
}

export async function runBoundedBench(): Promise<BenchReport> {
  const subjects: Array<[string, () => number[]]> = [
    [`RecentDecisions: ${WINDOWS} x ${MAX_REMEMBERED_DECISIONS.toLocaleString('en-US')} decisions, bound ${MAX_REMEMBERED_DECISIONS.toLocaleString('en-US')}`, recentDecisions],
    [`SessionStore: ${WINDOWS} x 50,000 new sessions, bound 50,000 per organization`, sessionStore],
  ];
  const rows: BenchRow[] = [];
  const targets: BenchTarget[] = [];
  for (const [subject, run] of subjects) {
    run(); // a warm-up on a throwaway instance, so the first window is not the JIT's
    const rates = run();
    rows.push(rowOf(subject, rates));
    targets.push(targetOf(subject, rates));
  }
  if (recentBytesPerEntry !== undefined) rows[0].extra = { ...rows[0].extra, retainedBytesPerEntry: recentBytesPerEntry };
  return {
    name: 'bounded',
    rows,
    targets,
    notes: [
      'Each window is one set of inserts with new keys: fillPerSec is the first, below the bound; perRound the others, at it.',
      'retainedBytesPerEntry: heap in use after a full collection with RecentDecisions at its bound, less that before it was made, over the bound.',
    ],
  };
}
