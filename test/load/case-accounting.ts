import type { Outcome } from './load-generator';
import type { AuditedDecision } from './load-stack';
import type { Received } from './recording-upstream';
import { TARGETS, TargetName } from './requests';

/**
 * Matching one case's requests by trace id: what clients were answered, what the upstream
 * received and what the audit trail holds; then the loss, the wrong allows, the time to recover
 * and whether the loss stays within the bound the documentation gives for the fault.
 */

/** Which documented loss bound a fault is held to. */
export type BoundRule =
  /** Nothing may be lost (docs/architecture.md "The audit pipeline": backpressure, not loss; docs/sidecar.md: the write-ahead log). */
  | { kind: 'clean' }
  /**
   * A gateway killed with kill -9 loses what it had not written: `audit.pending` on /health
   * (docs/security.md), read at `health.readAt`, plus what it decided after that read; while the
   * database keeps up that is at most AUDIT_FLUSH_MS of entries plus the batch being written
   * (docs/configuration.md). Requests it had in flight are recorded only once their exchange is
   * over (docs/architecture.md "Request path"), so those may go too. `killedAt` is when SIGKILL
   * was sent, `exitedAt` when the process was gone.
   */
  | { kind: 'gateway-kill'; target: TargetName; killedAt: number; exitedAt: number; health: { readAt: number; pending: number | null; oldestUnwrittenMs: number | null } }
  /** The sidecar killed with kill -9: no answered decision (docs/sidecar.md AUDIT_DURABILITY=write: "survives kill -9"). */
  | { kind: 'sidecar-kill'; killedAt: number; exitedAt: number };

/** When the fault began and was undone (what it restarted launched), in Date.now() ms. */
export interface FaultTimes {
  caseStartedAt: number;
  faultAt: number | null;
  clearedAt: number | null;
}

export interface TargetSummary {
  sent: number;
  shed: number;
  answeredByStatus: Record<string, number>;
  /** Steady requests not answered as their policy says (errors, 5xx, timeouts). */
  failed: number;
  /** From the first failed answer to the first answer as expected after the last failure; 0 without failures. */
  outageMs: number;
  /** From the moment the fault was undone to the first answer as expected after the last failure; null: not by the end of the case. */
  recoverMs: number | null;
  /** Of the answered requests, steady and malformed alike. */
  latencyMs: { p50: number; p99: number; max: number } | null;
}

export interface LossBound {
  rule: string;
  /** Entries each target may lose under the documented bound. */
  allowed: Record<string, number>;
  /** Requests the kill left without an answer: sent before the process was gone, not answered. */
  inFlightAtKill?: number;
  /** The killed gateway's /health just before the kill: `audit.pending` is "what a kill -9 would lose" (docs/security.md). */
  pendingAtKill?: number | null;
  oldestUnwrittenMsAtKill?: number | null;
  /** `pendingAtKill` plus the decisions the gateway answered after that read: the most the kill may lose of what it answered. */
  pendingBound?: number;
  /**
   * AUDIT_FLUSH_MS of entries plus the batch being written, at the paced rate: the documented
   * bound "while the database keeps up"; reported, not gated, as it depends on the machine's speed.
   */
  flushBound?: number;
  withinFlushBound?: boolean;
  within: boolean;
}

export interface CaseAccount {
  sent: number;
  shed: number;
  answeredByStatus: Record<string, number>;
  /** Requests the upstream received. */
  forwarded: number;
  /** Requests with a decision entry in the audit trail. */
  audited: number;
  /** Requests that must be in the trail: forwarded, or answered with a decision (or a Redis refusal, which is audited as a denial). */
  mustBeAudited: number;
  /** `answeredByRoute`: answered decisions missing, by route (`proxy`, `enforce`): the sidecar's durability differs between them. */
  missing: { total: number; answered: number; unanswered: number; byTarget: Record<string, number>; answeredByRoute: Record<string, number>; samples: string[] };
  wrongAllows: { total: number; forwarded: number; answeredAllow: number; auditedAllow: number; samples: string[] };
  /** Received twice by the upstream, or audited twice: none should be. */
  duplicates: { forwarded: number; audited: number };
  /** Answered requests whose audited decision differs from the one answered. */
  decisionMismatches: number;
  /** Audited although the client got no answer (in flight at a kill, timed out): no loss, for information. */
  auditedUnanswered: number;
  recoverMs: number | null;
  perTarget: Record<string, TargetSummary>;
  bound: LossBound;
  malformed?: MalformedSummary;
}

export interface MalformedSummary {
  sent: number;
  answeredByStatus: Record<string, number>;
  byVariant: Record<string, Record<string, number>>;
  /** 5xx answers or no answer at all to bad input: the documented answer is a 4xx naming the problem. */
  notRefusedCleanly: number;
}

export function accountCase(
  outcomes: readonly Outcome[],
  shedByTarget: Record<string, number>,
  received: ReadonlyMap<string, Received>,
  audited: readonly AuditedDecision[],
  times: FaultTimes,
  rule: BoundRule,
  flushBound: number,
): CaseAccount {
  const auditByTrace = new Map<string, AuditedDecision[]>();
  for (const entry of audited) {
    const list = auditByTrace.get(entry.traceId);
    if (list) list.push(entry);
    else auditByTrace.set(entry.traceId, [entry]);
  }
  const account: CaseAccount = {
    sent: outcomes.length,
    shed: Object.values(shedByTarget).reduce((sum, n) => sum + n, 0),
    answeredByStatus: {},
    forwarded: 0,
    audited: 0,
    mustBeAudited: 0,
    missing: { total: 0, answered: 0, unanswered: 0, byTarget: zeroPerTarget(), answeredByRoute: { proxy: 0, enforce: 0 }, samples: [] },
    wrongAllows: { total: 0, forwarded: 0, answeredAllow: 0, auditedAllow: 0, samples: [] },
    duplicates: { forwarded: 0, audited: 0 },
    decisionMismatches: 0,
    auditedUnanswered: 0,
    recoverMs: 0,
    perTarget: {},
    bound: { rule: '', allowed: {}, within: true },
  };
  const missingAnsweredByTarget = zeroPerTarget();
  const missingUnansweredByTarget = zeroPerTarget();
  for (const outcome of outcomes) {
    count(account.answeredByStatus, answerKey(outcome));
    const upstream = received.get(outcome.traceId);
    const entries = auditByTrace.get(outcome.traceId) ?? [];
    if (upstream) account.forwarded++;
    if (upstream && upstream.count > 1) account.duplicates.forwarded++;
    if (entries.length > 0) account.audited++;
    if (entries.length > 1) account.duplicates.audited++;
    if (entries.length > 0 && outcome.status === null) account.auditedUnanswered++;
    if (outcome.decision !== null && entries.length > 0 && entries[0].decision !== outcome.decision) account.decisionMismatches++;
    if (upstream !== undefined || outcome.decision !== null || outcome.redisRefusal) {
      account.mustBeAudited++;
      if (entries.length === 0) {
        account.missing.total++;
        account.missing.byTarget[outcome.target]++;
        if (outcome.status === null) {
          account.missing.unanswered++;
          missingUnansweredByTarget[outcome.target]++;
        } else {
          account.missing.answered++;
          account.missing.answeredByRoute[outcome.route]++;
          missingAnsweredByTarget[outcome.target]++;
        }
        if (account.missing.samples.length < 10) account.missing.samples.push(`${outcome.traceId} ${outcome.route} (${answerKey(outcome)}${upstream ? ', forwarded' : ''})`);
      }
    }
    checkWrongAllow(account, outcome, upstream, entries);
  }
  for (const target of TARGETS) account.perTarget[target] = summariseTarget(outcomes, target, shedByTarget[target] ?? 0, times);
  account.recoverMs = worstRecovery(Object.values(account.perTarget));
  account.bound = lossBound(rule, outcomes, { answered: missingAnsweredByTarget, unanswered: missingUnansweredByTarget }, flushBound);
  const malformed = outcomes.filter((outcome) => outcome.variant !== 'normal');
  if (malformed.length > 0) account.malformed = summariseMalformed(malformed);
  return account;
}

/** A request the policies deny (or that is malformed) must not reach the upstream, be answered as allowed, or be audited as allowed. */
function checkWrongAllow(account: CaseAccount, outcome: Outcome, upstream: Received | undefined, entries: AuditedDecision[]): void {
  const secretPath = upstream !== undefined && /secret/i.test(safeDecode(upstream.url));
  if (outcome.kind !== 'deny' && outcome.kind !== 'malformed' && !secretPath) return;
  const forwarded = upstream !== undefined;
  const answeredAllow = outcome.decision === 'allow' || (outcome.route === 'proxy' && outcome.status !== null && outcome.status < 300);
  const auditedAllow = entries.some((entry) => entry.decision === 'allow');
  if (!forwarded && !answeredAllow && !auditedAllow) return;
  account.wrongAllows.total++;
  if (forwarded) account.wrongAllows.forwarded++;
  if (answeredAllow) account.wrongAllows.answeredAllow++;
  if (auditedAllow) account.wrongAllows.auditedAllow++;
  if (account.wrongAllows.samples.length < 10) account.wrongAllows.samples.push(`${outcome.traceId} ${outcome.variant} (${answerKey(outcome)}${forwarded ? `, upstream got ${upstream.url}` : ''})`);
}

function safeDecode(url: string): string {
  try {
    return decodeURIComponent(url);
  } catch {
    return url;
  }
}

/** Answered as its policy says: an allowed request 2xx, a denied one 403 (the proxy) or `decision: deny` (/enforce). */
export function answeredAsExpected(outcome: Outcome): boolean {
  if (outcome.status === null) return false;
  if (outcome.kind === 'deny') return outcome.route === 'proxy' ? outcome.status === 403 : outcome.status === 200 && outcome.decision === 'deny';
  return outcome.status >= 200 && outcome.status < 300 && (outcome.route === 'proxy' || outcome.decision === 'allow');
}

/**
 * Recovery is read on answer times: a request sent during an outage may wait and be answered
 * well once the fault is undone (a Redis command waits in ioredis's offline queue).
 */
function summariseTarget(outcomes: readonly Outcome[], target: TargetName, shed: number, times: FaultTimes): TargetSummary {
  const mine = outcomes.filter((outcome) => outcome.target === target);
  const steady = mine.filter((outcome) => outcome.variant === 'normal').sort((a, b) => a.doneAt - b.doneAt);
  const answeredByStatus: Record<string, number> = {};
  for (const outcome of mine) count(answeredByStatus, answerKey(outcome));
  const failures = steady.filter((outcome) => !answeredAsExpected(outcome));
  const summary: TargetSummary = { sent: mine.length, shed, answeredByStatus, failed: failures.length, outageMs: 0, recoverMs: 0, latencyMs: latencies(mine) };
  if (failures.length === 0) return summary;
  const lastFailure = failures[failures.length - 1].doneAt;
  const recovered = steady.find((outcome) => outcome.doneAt > lastFailure && answeredAsExpected(outcome));
  if (recovered === undefined) {
    summary.outageMs = steady[steady.length - 1].doneAt - failures[0].doneAt;
    summary.recoverMs = null;
    return summary;
  }
  summary.outageMs = recovered.doneAt - failures[0].doneAt;
  const undoneAt = times.clearedAt ?? times.faultAt ?? times.caseStartedAt;
  summary.recoverMs = Math.max(0, recovered.doneAt - undoneAt);
  return summary;
}

function latencies(outcomes: readonly Outcome[]): TargetSummary['latencyMs'] {
  const answered = outcomes
    .filter((outcome) => outcome.status !== null)
    .map((outcome) => outcome.doneAt - outcome.sentAt)
    .sort((a, b) => a - b);
  if (answered.length === 0) return null;
  const at = (quantile: number) => answered[Math.min(answered.length - 1, Math.floor(answered.length * quantile))];
  return { p50: at(0.5), p99: at(0.99), max: answered[answered.length - 1] };
}

function worstRecovery(targets: TargetSummary[]): number | null {
  let worst = 0;
  for (const target of targets) {
    if (target.recoverMs === null) return null;
    worst = Math.max(worst, target.recoverMs);
  }
  return worst;
}

function lossBound(rule: BoundRule, outcomes: readonly Outcome[], missing: { answered: Record<string, number>; unanswered: Record<string, number> }, flushBound: number): LossBound {
  const none = zeroPerTarget();
  const lostElsewhere = (killed: TargetName | null) => TARGETS.some((target) => target !== killed && missing.answered[target] + missing.unanswered[target] > 0);
  switch (rule.kind) {
    case 'clean':
      return { rule: 'clean fault: nothing lost', allowed: none, within: !lostElsewhere(null) };
    case 'gateway-kill': {
      const inFlightAtKill = leftUnanswered(outcomes, rule.target, rule.killedAt, rule.exitedAt);
      const decidedSinceRead = outcomes.filter((outcome) => outcome.target === rule.target && (outcome.decision !== null || outcome.redisRefusal) && outcome.doneAt >= rule.health.readAt && outcome.sentAt <= rule.exitedAt).length;
      // No /health answer: no measured bound, so only the documented flush bound is left.
      const pendingBound = rule.health.pending === null ? flushBound : rule.health.pending + decidedSinceRead;
      return {
        rule: `kill -9 of ${rule.target}: of what it answered, at most what /health showed pending just before plus what it decided since (${pendingBound}); of the ${inFlightAtKill} requests it left unanswered, at most those`,
        allowed: { ...none, [rule.target]: pendingBound + inFlightAtKill },
        inFlightAtKill,
        pendingAtKill: rule.health.pending,
        oldestUnwrittenMsAtKill: rule.health.oldestUnwrittenMs,
        pendingBound,
        flushBound,
        withinFlushBound: missing.answered[rule.target] <= flushBound,
        within: missing.answered[rule.target] <= pendingBound && missing.unanswered[rule.target] <= inFlightAtKill && !lostElsewhere(rule.target),
      };
    }
    case 'sidecar-kill': {
      const inFlightAtKill = leftUnanswered(outcomes, 'sidecar', rule.killedAt, rule.exitedAt);
      return {
        rule: `kill -9 of the sidecar: no answered decision lost (AUDIT_DURABILITY=write); of the ${inFlightAtKill} requests it left unanswered, at most those`,
        allowed: { ...none, sidecar: inFlightAtKill },
        inFlightAtKill,
        within: missing.answered.sidecar === 0 && missing.unanswered.sidecar <= inFlightAtKill && !lostElsewhere('sidecar'),
      };
    }
  }
}

/** Requests to `target` sent before the killed process was gone that got no answer: the kill's own. */
function leftUnanswered(outcomes: readonly Outcome[], target: TargetName, killedAt: number, exitedAt: number): number {
  return outcomes.filter((outcome) => outcome.target === target && outcome.status === null && outcome.sentAt <= exitedAt && outcome.doneAt >= killedAt).length;
}

function summariseMalformed(outcomes: readonly Outcome[]): MalformedSummary {
  const summary: MalformedSummary = { sent: outcomes.length, answeredByStatus: {}, byVariant: {}, notRefusedCleanly: 0 };
  for (const outcome of outcomes) {
    const key = answerKey(outcome);
    count(summary.answeredByStatus, key);
    summary.byVariant[outcome.variant] ??= {};
    count(summary.byVariant[outcome.variant], key);
    if (outcome.kind === 'malformed' && (outcome.status === null || outcome.status >= 500)) summary.notRefusedCleanly++;
  }
  return summary;
}

/** The status, or the error of a request that got no answer. */
export function answerKey(outcome: Outcome): string {
  return outcome.status === null ? (outcome.error ?? 'no answer') : String(outcome.status);
}

function count(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

function zeroPerTarget(): Record<string, number> {
  return Object.fromEntries(TARGETS.map((target) => [target, 0]));
}
