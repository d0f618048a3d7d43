import { Inject, Injectable, Optional } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { InMemoryBudgetLedger } from '../policy-engine/budget-ledger';
import type { PolicySet } from '../policy-engine/policy-set';
import type { BudgetAnswer, BudgetHold, BudgetLedger, LabelGrant, SessionFacts } from '../policy-engine/types';
import type { Principal } from './agent-authenticator';
import { BUDGET_LEDGER, SESSION_MEMORY, SessionMemory } from './decision-sources';
import { SessionKey, SessionStore } from './session-store';

/** Reservations kept for an outcome to settle (`/v1/audit`); past this the oldest keep their reserved cost. */
const MAX_PENDING_SETTLEMENTS = 100_000;
/** How long a reservation waits for its outcome, ms; then its reserved cost stands (it is not released). */
export const SETTLE_WITHIN_MS = 5 * 60 * 1000;

interface Settlement {
  readonly orgId: string;
  readonly agentId: string;
  readonly holds: readonly BudgetHold[];
  readonly untilMs: number;
}

/** What of a decision is remembered: the session's facts it read and the labels it added. */
export interface Remembered {
  readonly facts: SessionFacts;
  readonly added: readonly string[];
}

/**
 * The decision's memory (docs/policies.md "Sessions", "Budgets"): the session facts a decision
 * reads, what a call let through leaves behind (its action, its labels), and the budget
 * reservations its outcome settles. The stores sit behind SESSION_MEMORY and BUDGET_LEDGER, so the
 * gateway, Redis and the edge each bring theirs; without them, both are kept in this process.
 */
@Injectable()
export class DecisionMemory {
  /** Reservations of checked calls awaiting `/v1/audit`, oldest first (insertion order). */
  // Insertion order is expiry order (each waits SETTLE_WITHIN_MS); an LRU read with `peek` only, so its oldest is found in O(1) (docs/performance.md).
  private readonly settlements = new LRUCache<string, Settlement>({ max: MAX_PENDING_SETTLEMENTS });

  constructor(
    @Optional() @Inject(SESSION_MEMORY) private readonly sessions: SessionMemory = new SessionStore(),
    @Optional() @Inject(BUDGET_LEDGER) readonly budgets: BudgetLedger = new InMemoryBudgetLedger({ settleWithinMs: SETTLE_WITHIN_MS }),
  ) {}

  /** The session facts policies read, when any of the set reads or adds them; else undefined (nothing is looked up). */
  recall(set: PolicySet, principal: Principal, sessionId: string | undefined, nowMs: number): SessionFacts | Promise<SessionFacts> | undefined {
    return set.usesSession ? this.sessions.recall(keyOf(principal, sessionId), nowMs) : undefined;
  }

  /** The ledger an evaluation reserves through: several questions of one request reserve each budget once. */
  ledgerFor(questions: number): BudgetLedger {
    return questions === 1 ? this.budgets : onceLedger(this.budgets);
  }

  /**
   * After a decision: a call let through is remembered (its action, and its labels, which only
   * accumulate); a call refused gives its reservations back. Answers what to put in the audit entry.
   */
  afterDecision(set: PolicySet, principal: Principal, sessionId: string | undefined, call: { action: string; letThrough: boolean; labels: Parameters<SessionMemory['remember']>[2]; holds: BudgetHold[] | undefined; facts: SessionFacts | undefined }, nowMs: number): Remembered | Promise<Remembered> | undefined {
    if (!call.letThrough && call.holds !== undefined) this.release(call.holds.splice(0), nowMs);
    if (call.facts === undefined) return undefined;
    // The facts read, copied before this call's own action and labels change them: the audit entry's input keeps them, so a backtest replays what this call read.
    const facts: SessionFacts = { id: call.facts.id, labels: [...call.facts.labels], agent_labels: [...call.facts.agent_labels], calls: copyOfCalls(call.facts.calls) };
    const added = call.letThrough ? this.sessions.remember(keyOf(principal, sessionId), call.action, call.labels, nowMs) : [];
    return added instanceof Promise ? added.then((labels) => ({ facts, added: labels })) : { facts, added };
  }

  /** Gives back what a decision reserved, when it failed after its evaluation (its session could not be remembered). */
  releaseHolds(holds: BudgetHold[] | undefined, nowMs: number): void {
    if (holds !== undefined) this.release(holds.splice(0), nowMs);
  }

  /**
   * What became of a call whose cost is held: a call that failed before or at its upstream (a 5xx)
   * gives the reservations back; one answered by a decision alone (PDP, `/v1/check`, the
   * sidecar) waits for `/v1/audit` to report its cost; any other keeps the reserved cost.
   */
  afterOutcome(decisionId: string, principal: Principal, holds: readonly BudgetHold[], outcome: { status: number; upstreamStatus?: number | null }, nowMs: number): void {
    if (holds.length === 0) return;
    if (outcome.status >= 500) return this.release(holds, nowMs);
    if (outcome.upstreamStatus !== undefined) return;
    this.dropExpiredSettlements(nowMs);
    this.settlements.set(decisionId, { orgId: principal.agent.orgId, agentId: principal.agent.id, holds, untilMs: nowMs + SETTLE_WITHIN_MS });
  }

  /**
   * Settles the reservations of a checked call with the cost its outcome reports (`/v1/audit`
   * `cost`; `failed` releases them). Only the deciding agent's organization and agent settle
   * them, once; false when there is nothing (left) to settle.
   */
  async settle(orgId: string, agentId: string, decisionId: string, cost: number | 'failed', nowMs: number): Promise<boolean> {
    const settlement = this.settlements.peek(decisionId);
    if (settlement === undefined || settlement.orgId !== orgId || settlement.agentId !== agentId || nowMs > settlement.untilMs) return false;
    this.settlements.delete(decisionId);
    const actual = cost === 'failed' ? 0 : cost;
    const settled = await Promise.all(settlement.holds.map((hold) => this.budgets.settle(hold, actual, nowMs)));
    return settled.some(Boolean);
  }

  /**
   * A call an edge sidecar let through, from its ingested audit entry: remembered in this
   * memory as the gateway's own are, so a session (or agent) labelled at the edge carries its
   * labels here too. Each label takes the scope and ttl the organization's policies give it
   * (an agent label's ttl counted from the edge decision); labels only accumulate.
   */
  async rememberEdgeCall(set: PolicySet, owner: { orgId: string; agentId: string }, sessionId: string, action: string, labelsAdded: readonly string[], atMs: number, nowMs: number): Promise<void> {
    if (!set.usesSession) return;
    const grants: LabelGrant[] = [];
    const sessionLabels: string[] = [];
    for (const label of labelsAdded) {
      const ttlMs = set.agentLabelTtl(label);
      if (ttlMs === undefined) sessionLabels.push(label);
      else if (atMs + ttlMs > nowMs) grants.push({ policy: '', rule: '', labels: [label], scope: 'agent', ttlMs: atMs + ttlMs - nowMs });
    }
    if (sessionLabels.length > 0) grants.push({ policy: '', rule: '', labels: sessionLabels, scope: 'session', ttlMs: 0 });
    await this.sessions.remember({ orgId: owner.orgId, agentId: owner.agentId, sessionId }, action, grants, nowMs);
  }

  /** A session's facts as they stand (the admin API's timeline): its labels and the agent's. */
  async sessionFacts(orgId: string, agentId: string, sessionId: string, nowMs: number): Promise<SessionFacts> {
    return this.sessions.recall({ orgId, agentId, sessionId }, nowMs);
  }

  /** Ends labels (the admin API): of one session, or of the agent itself. */
  async clearLabels(orgId: string, agentId: string, sessionId: string | undefined, nowMs: number): Promise<boolean> {
    return this.sessions.clearLabels(orgId, agentId, sessionId, nowMs);
  }

  private release(holds: readonly BudgetHold[], nowMs: number): void {
    // A release that fails (Redis away) leaves the cost reserved: the budget errs on the side of spent.
    for (const hold of holds) void Promise.resolve(this.budgets.settle(hold, 0, nowMs)).catch(() => false);
  }

  private dropExpiredSettlements(nowMs: number): void {
    for (let i = 0; i < 2; i++) {
      const next = this.settlements.rentries().next();
      if (next.done === true) return;
      const [oldestId, oldest] = next.value as [string, Settlement];
      if (oldest.untilMs >= nowMs) return;
      this.settlements.delete(oldestId);
    }
  }
}

function keyOf(principal: Principal, sessionId: string | undefined): SessionKey {
  return { orgId: principal.agent.orgId, agentId: principal.agent.id, sessionId: sessionId ?? '' };
}

/** A ledger reserving each budget once however many evaluations of one request reach it (onceLimiter's twin). */
function onceLedger(ledger: BudgetLedger): BudgetLedger {
  const seen = new Map<string, BudgetAnswer | Promise<BudgetAnswer>>();
  return {
    reserve: (key, cost, limit, windowMs, nowMs) => {
      const known = seen.get(key);
      // A later question reaching a budget already reserved for this request holds nothing new.
      if (known !== undefined) return known instanceof Promise ? known.then(again) : again(known);
      const answer = ledger.reserve(key, cost, limit, windowMs, nowMs);
      seen.set(key, answer);
      return answer;
    },
    peek: (key, cost, limit, windowMs, nowMs) => ledger.peek(key, cost, limit, windowMs, nowMs),
    settle: (hold, actual, nowMs) => ledger.settle(hold, actual, nowMs),
  };
}

// The second sight of a reservation: it fits (it is held once), but under an id that settles nothing.
function again(answer: BudgetAnswer): BudgetAnswer {
  return 'id' in answer ? { id: '' } : answer;
}

// A key-by-key copy into another prototype-less record: spreading one (the session store's, which has no prototype so that
// any action is a plain key) takes V8's slow path, about three times as long (bench/policy.bench.ts prices the copy).
function copyOfCalls(calls: Readonly<Record<string, number>>): Record<string, number> {
  const copy = Object.create(null) as Record<string, number>;
  for (const action in calls) copy[action] = calls[action];
  return copy;
}
