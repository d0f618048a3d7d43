import fs from 'node:fs';
import path from 'node:path';
import { accountCase, answerKey, BoundRule, CaseAccount, FaultTimes } from './case-accounting';
import type { CaseId, LoadConfig } from './load-config';
import { Outcome, PacedStream, targetPool } from './load-generator';
import { AuditedDecision, LoadStack, sidecarReady } from './load-stack';
import { sleep } from './private-services';
import { casePrefix, malformedRequest, normalRequest, TARGETS, TargetName, traceIdOf } from './requests';
import { getJson, numberIn } from './service-process';

/**
 * The faults of docs/load-suite.md "The cases", each injected while the two gateways and the sidecar are under the
 * steady load, then undone; the case's requests are matched once the audit trail has settled.
 */

/** What a fault did, for the report. */
interface FaultRecord {
  faultAt: number | null;
  clearedAt: number | null;
  rule: BoundRule;
  notes: string[];
  /** While Redis was certainly away: from its exit to the start of the new one. */
  redisDown?: { from: number; to: number };
}

/** The case's running load, which a fault may add to (the malformed burst) or look at (requests in flight at a kill). */
interface CaseLoad {
  streams: Record<TargetName, PacedStream>;
  outcomes: Outcome[];
  caseId: CaseId;
}

interface FaultCase {
  id: CaseId;
  title: string;
  /** Load before the fault (the steady case: its whole length). */
  beforeS(config: LoadConfig): number;
  /** Load after the fault is undone. */
  afterS(config: LoadConfig): number;
  /** Injects the fault and undoes it; returns once what it restarted answers again. */
  inject(stack: LoadStack, load: CaseLoad, record: FaultRecord): Promise<void>;
}

const CLEAN: BoundRule = { kind: 'clean' };
const before = (config: LoadConfig) => config.beforeS;
const after = (config: LoadConfig) => config.afterS;

export const FAULT_CASES: readonly FaultCase[] = [
  {
    id: 'steady',
    title: 'steady load, no fault (control)',
    beforeS: (config) => config.steadyS,
    afterS: () => 0,
    inject: async () => undefined,
  },
  {
    id: 'a',
    title: '(a) PostgreSQL restarted',
    beforeS: before,
    afterS: after,
    inject: async (stack, _load, record) => {
      record.faultAt = Date.now();
      await stack.postgres.restartServer();
      record.clearedAt = Date.now();
      record.notes.push(`pg_ctl restart -m fast took ${record.clearedAt - record.faultAt} ms`);
    },
  },
  {
    id: 'b',
    title: '(b) PostgreSQL stopped',
    beforeS: before,
    afterS: after,
    inject: async (stack, _load, record) => {
      record.faultAt = Date.now();
      await stack.postgres.stopServer();
      await sleep(stack.config.postgresStopS * 1000);
      await stack.postgres.startServer();
      record.clearedAt = Date.now();
      record.notes.push(`PostgreSQL down for ${record.clearedAt - record.faultAt} ms (stop, ${stack.config.postgresStopS} s, start)`);
    },
  },
  {
    id: 'c1',
    title: '(c) gateway-2 killed (kill -9) under load, started again',
    beforeS: before,
    afterS: after,
    inject: async (stack, _load, record) => {
      record.faultAt = Date.now();
      await killAndRestart(stack, record, 'killed');
    },
  },
  {
    id: 'c2',
    title: '(c) gateway-2 killed (kill -9) right after a PostgreSQL restart, started again',
    beforeS: before,
    afterS: after,
    inject: async (stack, _load, record) => {
      record.faultAt = Date.now();
      await stack.postgres.restartServer();
      await killAndRestart(stack, record, `PostgreSQL restarted in ${Date.now() - record.faultAt} ms, then killed`);
    },
  },
  {
    id: 'd',
    title: '(d) Redis stopped',
    beforeS: before,
    afterS: after,
    inject: async (stack, _load, record) => {
      record.faultAt = Date.now();
      await stack.redis.stopServer();
      const downAt = Date.now();
      await sleep(stack.config.redisStopS * 1000);
      record.redisDown = { from: downAt, to: Date.now() };
      await stack.redis.startServer();
      record.clearedAt = Date.now();
      record.notes.push(`Redis down for ${record.clearedAt - record.faultAt} ms (redis-cli shutdown, ${stack.config.redisStopS} s, start)`);
    },
  },
  {
    id: 'e',
    title: '(e) gateway-1 stopped behind the sidecar, started again',
    beforeS: before,
    afterS: after,
    inject: async (stack, _load, record) => {
      const gateway = stack.service('gateway-1');
      record.faultAt = Date.now();
      await gateway.stop();
      const stoppedAt = Date.now();
      await sleep(stack.config.gatewayAwayS * 1000);
      gateway.launch();
      record.clearedAt = Date.now();
      await gateway.ready(stack.config.startTimeoutS * 1000);
      const sidecar = await getJson(`${stack.sidecar.url}/health`);
      record.notes.push(
        `SIGTERM shutdown took ${stoppedAt - record.faultAt} ms; away ${record.clearedAt - stoppedAt} ms; ready ${Date.now() - record.clearedAt} ms after launch; sidecar audit.pendingEntries then ${numberIn(sidecar?.body, 'audit', 'pendingEntries')}`,
      );
    },
  },
  {
    id: 'f',
    title: '(f) sidecar killed (kill -9), started again',
    beforeS: before,
    afterS: after,
    inject: async (stack, _load, record) => {
      record.faultAt = Date.now();
      await stack.sidecar.kill();
      const exitedAt = Date.now();
      stack.sidecar.launch();
      record.clearedAt = Date.now();
      await stack.sidecar.ready(stack.config.startTimeoutS * 1000, sidecarReady);
      record.rule = { kind: 'sidecar-kill', killedAt: record.faultAt, exitedAt };
      record.notes.push(`sidecar answering again ${Date.now() - record.faultAt} ms after the kill (same CACHE_DIR)`);
    },
  },
  {
    id: 'g',
    title: '(g) burst of malformed requests',
    beforeS: before,
    afterS: after,
    inject: async (stack, load, record) => {
      const config = stack.config;
      const rate = config.burstRate / TARGETS.length;
      // Other clients than the steady load's: connections of their own.
      const pools = TARGETS.map((target) => targetPool(stack.service(target).url, config.concurrency, config.requestTimeoutMs));
      const bursts = TARGETS.map(
        (target, index) =>
          new PacedStream(pools[index], rate, config.concurrency, (seq) => malformedRequest(target, seq, traceIdOf(stack.runTag, load.caseId, target, seq, true), stack.agent), load.outcomes),
      );
      record.faultAt = Date.now();
      for (const burst of bursts) burst.start();
      await sleep(config.burstS * 1000);
      await Promise.all(bursts.map((burst) => burst.stop()));
      record.clearedAt = Date.now();
      await Promise.all(pools.map((pool) => pool.destroy()));
      const shed = bursts.reduce((sum, burst) => sum + burst.shed, 0);
      record.notes.push(`${config.burstRate} malformed requests a second for ${config.burstS} s over the three targets${shed > 0 ? `, ${shed} shed` : ''}`);
    },
  },
];

/**
 * kill -9 of gateway-2 and a start at once, as a supervisor restarts a crashed process. Its
 * /health is read just before: `audit.pending` is what the kill should lose (docs/security.md).
 */
async function killAndRestart(stack: LoadStack, record: FaultRecord, what: string): Promise<void> {
  const gateway = stack.service('gateway-2');
  const healthReadAt = Date.now();
  const health = await getJson(`${gateway.url}/health`, 1000);
  const killedAt = Date.now();
  await gateway.kill();
  const exitedAt = Date.now();
  gateway.launch();
  record.clearedAt = Date.now();
  await gateway.ready(stack.config.startTimeoutS * 1000);
  const pending = numberIn(health?.body, 'audit', 'pending');
  const oldestUnwrittenMs = numberIn(health?.body, 'audit', 'oldestUnwrittenMs');
  record.rule = { kind: 'gateway-kill', target: 'gateway-2', killedAt, exitedAt, health: { readAt: healthReadAt, pending, oldestUnwrittenMs } };
  record.notes.push(
    `${what} ${killedAt - healthReadAt} ms after reading its /health (${health?.status ?? 'no answer'}: audit.pending ${pending}, oldestUnwrittenMs ${oldestUnwrittenMs}); answering again ${Date.now() - killedAt} ms after the kill`,
  );
}

export interface CaseReport extends CaseAccount {
  id: CaseId;
  title: string;
  startedAt: string;
  loadSeconds: number;
  /** Fault and undo times in ms from the start of the case's load. */
  fault: { atMs: number | null; clearedAtMs: number | null; notes: string[] };
  /** How long after the load stopped the trail had taken every entry it would. */
  settle: { ms: number; settled: boolean; pendingLeft: Record<string, number | null> };
  sidecarFleet?: Awaited<ReturnType<LoadStack['sidecarFleet']>>;
  /**
   * The gateways' answers to requests under the Redis-counted rate limit that were sent and
   * answered while Redis was away: 503 by the documentation (docs/configuration.md REDIS_URL);
   * an allow there is a decision its rule could not have made.
   */
  underRateLimitWhileRedisDown?: { answeredByStatus: Record<string, number>; allowed: number };
}

/** Runs one case: steady load on the three targets, the fault, the load again, then the matching. */
export async function runCase(stack: LoadStack, faultCase: FaultCase): Promise<CaseReport> {
  const config = stack.config;
  const load: CaseLoad = { streams: {} as Record<TargetName, PacedStream>, outcomes: [], caseId: faultCase.id };
  for (const target of TARGETS) {
    load.streams[target] = new PacedStream(stack.pools[target], config.ratePerTarget, config.concurrency, (seq) => normalRequest(target, seq, traceIdOf(stack.runTag, faultCase.id, target, seq), stack.agent), load.outcomes);
  }
  const record: FaultRecord = { faultAt: null, clearedAt: null, rule: CLEAN, notes: [] };
  const startedAt = Date.now();
  for (const stream of Object.values(load.streams)) stream.start();
  await sleep(faultCase.beforeS(config) * 1000);
  await faultCase.inject(stack, load, record);
  await sleep(faultCase.afterS(config) * 1000);
  await Promise.all(Object.values(load.streams).map((stream) => stream.stop()));
  const loadSeconds = (Date.now() - startedAt) / 1000;

  const prefix = casePrefix(stack.runTag, faultCase.id);
  const settle = await settleAudit(stack, prefix, config.settleTimeoutS * 1000);
  const audited = await stack.auditedDecisions(prefix);
  const times: FaultTimes = { caseStartedAt: startedAt, faultAt: record.faultAt, clearedAt: record.clearedAt };
  const shed = Object.fromEntries(TARGETS.map((target) => [target, load.streams[target].shed]));
  // AUDIT_FLUSH_MS of entries at the paced rate, and a batch being written, which holds at most as much while the database keeps up.
  const flushBound = Math.ceil((2 * config.ratePerTarget * config.auditFlushMs) / 1000);
  const account = accountCase(load.outcomes, shed, stack.upstream.received, audited, times, record.rule, flushBound);
  if (config.keepOutcomes) keepOutcomes(path.join(stack.logDir, `${faultCase.id}-outcomes.jsonl`), load.outcomes, stack, audited);
  const report: CaseReport = {
    id: faultCase.id,
    title: faultCase.title,
    startedAt: new Date(startedAt).toISOString(),
    loadSeconds,
    fault: { atMs: relative(record.faultAt, startedAt), clearedAtMs: relative(record.clearedAt, startedAt), notes: record.notes },
    settle,
    ...account,
  };
  if (faultCase.id === 'e' || faultCase.id === 'f') report.sidecarFleet = await stack.sidecarFleet();
  if (record.redisDown) report.underRateLimitWhileRedisDown = limitedWhile(load.outcomes, record.redisDown);
  return report;
}

function limitedWhile(outcomes: readonly Outcome[], window: { from: number; to: number }): NonNullable<CaseReport['underRateLimitWhileRedisDown']> {
  const within = outcomes.filter((outcome) => outcome.kind === 'limited' && outcome.target !== 'sidecar' && outcome.sentAt >= window.from && outcome.doneAt <= window.to);
  const answeredByStatus: Record<string, number> = {};
  for (const outcome of within) answeredByStatus[answerKey(outcome)] = (answeredByStatus[answerKey(outcome)] ?? 0) + 1;
  return { answeredByStatus, allowed: within.filter((outcome) => outcome.status !== null && outcome.status < 300).length };
}

/**
 * Waits until no process holds an unwritten entry (the gateways' `audit.pending`, the sidecar's
 * unacknowledged `audit.pendingEntries`) and the case's count in the trail has stopped moving.
 */
async function settleAudit(stack: LoadStack, prefix: string, timeoutMs: number): Promise<CaseReport['settle']> {
  const started = Date.now();
  let last = -1;
  for (;;) {
    const pending = await stack.pendingAudit();
    const count = await stack.auditedDecisions(prefix).then(
      (entries) => entries.length,
      () => -1,
    );
    const drained = Object.values(pending).every((value) => value === 0);
    if (drained && count >= 0 && count === last) return { ms: Date.now() - started, settled: true, pendingLeft: pending };
    if (Date.now() - started > timeoutMs) return { ms: Date.now() - started, settled: false, pendingLeft: pending };
    last = count;
    await sleep(500);
  }
}

function keepOutcomes(file: string, outcomes: readonly Outcome[], stack: LoadStack, audited: readonly AuditedDecision[]): void {
  const auditedDecisions = new Map(audited.map((entry) => [entry.traceId, entry.decision]));
  const lines = outcomes.map((outcome) => JSON.stringify({ ...outcome, forwarded: stack.upstream.received.get(outcome.traceId)?.count ?? 0, audited: auditedDecisions.get(outcome.traceId) ?? null }));
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

function relative(at: number | null, start: number): number | null {
  return at === null ? null : at - start;
}
