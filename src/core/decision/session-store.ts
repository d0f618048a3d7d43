import { LRUCache } from 'lru-cache';
import type { LabelGrant, SessionFacts } from '../policy-engine/types';

/**
 * Sessions in least-recently-used order: finding the oldest is O(1) whatever the history (a
 * `Map` re-inserted on every touch and trimmed from its front walks the holes its deletions
 * left, docs/performance.md). Never trimmed by itself: `max` is above the store's own bounds,
 * which end sessions explicitly so both orders stay in step.
 */
type SessionOrder = LRUCache<string, Session>;

/** Who a session belongs to, and its id (`` for the agent's own scope). */
export interface SessionKey {
  readonly orgId: string;
  readonly agentId: string;
  readonly sessionId: string;
}

/** Bounds of the in-process session store (docs/policies.md "Sessions"). */
export interface SessionStoreOptions {
  /** Sessions kept per agent; a new one past this ends the agent's least recently used. Default 64. */
  readonly maxSessionsPerAgent?: number;
  /** Sessions kept per organization; a new one past this ends the organization's least recently used. Default 10 000. */
  readonly maxSessionsPerOrg?: number;
  /** Distinct actions remembered per session; a new one past this forgets the session's oldest. Default 256. */
  readonly maxActionsPerSession?: number;
  /** Labels kept per session and per agent. Default 64. */
  readonly maxLabels?: number;
  /** A session unused this long ends, ms. Default 1 hour. */
  readonly idleMs?: number;
}

class Session {
  readonly labels: string[] = [];
  readonly calls: Record<string, number> = Object.create(null) as Record<string, number>;
  actions = 0;

  constructor(
    readonly key: string,
    readonly orgId: string,
    readonly agentKey: string,
    readonly id: string,
    public touchedAt: number,
  ) {}
}

/** The labels on one agent, each until its expiry. */
class AgentLabels {
  readonly until = new Map<string, number>();
  current: readonly string[] = [];
  /** Earliest expiry among `until`: `current` is rebuilt only once it passes. */
  nextExpiry = Infinity;

  read(nowMs: number): readonly string[] {
    if (nowMs >= this.nextExpiry) this.rebuild(nowMs);
    return this.current;
  }

  add(label: string, untilMs: number, nowMs: number): void {
    this.until.set(label, Math.max(untilMs, this.until.get(label) ?? 0));
    this.rebuild(nowMs);
  }

  private rebuild(nowMs: number): void {
    let next = Infinity;
    for (const [label, until] of this.until) {
      if (until <= nowMs) this.until.delete(label);
      else next = Math.min(next, until);
    }
    this.current = Object.freeze([...this.until.keys()]);
    this.nextExpiry = next;
  }
}

const NO_LABELS: readonly string[] = Object.freeze([]);

/**
 * What sessions remember, in this process: each session's labels and calls, each agent's
 * labels. Sessions are kept in least-recently-used order per organization and per agent (two
 * Maps, whose insertion order is that order), so ending the oldest, on either bound or when idle,
 * costs O(1) whatever the history; a session's calls are a record of at most
 * maxActionsPerSession distinct actions. Agent labels are kept until their ttl, one entry per
 * labelled agent, never evicted earlier: an agent cannot shed one by flooding sessions.
 */
export class SessionStore {
  private readonly byOrg = new Map<string, SessionOrder>();
  private readonly byAgent = new Map<string, SessionOrder>();
  private readonly agentLabels = new Map<string, AgentLabels>();
  private readonly maxPerAgent: number;
  private readonly maxPerOrg: number;
  private readonly maxActions: number;
  private readonly maxLabels: number;
  private readonly idleMs: number;

  constructor(options: SessionStoreOptions = {}) {
    this.maxPerAgent = options.maxSessionsPerAgent ?? 64;
    this.maxPerOrg = options.maxSessionsPerOrg ?? 10_000;
    this.maxActions = options.maxActionsPerSession ?? 256;
    this.maxLabels = options.maxLabels ?? 64;
    this.idleMs = options.idleMs ?? 3_600_000;
  }

  /** The session's facts for a decision: O(1), one small object. */
  recall(key: SessionKey, nowMs: number): SessionFacts {
    const session = this.find(key, nowMs);
    const agentLabels = this.agentLabels.get(agentKeyOf(key))?.read(nowMs) ?? NO_LABELS;
    if (session === undefined) return { id: key.sessionId, labels: NO_LABELS, agent_labels: agentLabels, calls: EMPTY_CALLS };
    return { id: key.sessionId, labels: session.labels, agent_labels: agentLabels, calls: session.calls };
  }

  /** Remembers a call let through: its action, and the labels its `label` rules added. Returns the labels that were new. */
  remember(key: SessionKey, action: string, grants: readonly LabelGrant[] | undefined, nowMs: number): string[] {
    const session = this.find(key, nowMs) ?? this.open(key, nowMs);
    this.count(session, action);
    if (grants === undefined) return [];
    const added: string[] = [];
    for (const grant of grants) {
      for (const label of grant.labels) {
        if (grant.scope === 'agent' ? this.labelAgent(key, label, nowMs + grant.ttlMs, nowMs) : this.labelSession(session, label)) added.push(label);
      }
    }
    return added;
  }

  /** Ends the labels of one session, or (without a session id) the agent's own; true when there were some. */
  clearLabels(orgId: string, agentId: string, sessionId: string | undefined, nowMs: number): boolean {
    if (sessionId === undefined) return this.agentLabels.delete(agentKeyOf({ orgId, agentId }));
    const session = this.find({ orgId, agentId, sessionId }, nowMs);
    if (session === undefined || session.labels.length === 0) return false;
    session.labels.length = 0;
    return true;
  }

  /** How many sessions the organization has (tests, metrics). */
  sessionsOf(orgId: string): number {
    return this.byOrg.get(orgId)?.size ?? 0;
  }

  private labelSession(session: Session, label: string): boolean {
    if (session.labels.includes(label) || session.labels.length >= this.maxLabels) return false;
    session.labels.push(label);
    return true;
  }

  private labelAgent(key: SessionKey, label: string, untilMs: number, nowMs: number): boolean {
    const agentKey = agentKeyOf(key);
    let labels = this.agentLabels.get(agentKey);
    if (labels === undefined) {
      labels = new AgentLabels();
      this.agentLabels.set(agentKey, labels);
    }
    const isNew = !labels.read(nowMs).includes(label);
    if (isNew && labels.until.size >= this.maxLabels) return false;
    labels.add(label, untilMs, nowMs);
    return isNew;
  }

  private count(session: Session, action: string): void {
    const calls = session.calls;
    if (calls[action] !== undefined) {
      calls[action]++;
      return;
    }
    if (session.actions >= this.maxActions) {
      for (const oldest in calls) {
        delete calls[oldest];
        break;
      }
      session.actions--;
    }
    calls[action] = 1;
    session.actions++;
  }

  private find(key: SessionKey, nowMs: number): Session | undefined {
    const sessions = this.byOrg.get(key.orgId);
    const sessionKey = sessionKeyOf(key);
    const session = sessions?.get(sessionKey);
    if (session === undefined) return undefined;
    if (nowMs - session.touchedAt >= this.idleMs) {
      this.end(session);
      return undefined;
    }
    // `get` moves the session to the young end of the agent's order; the organization's moved above.
    this.byAgent.get(session.agentKey)!.get(sessionKey);
    session.touchedAt = nowMs;
    return session;
  }

  private open(key: SessionKey, nowMs: number): Session {
    const agentKey = agentKeyOf(key);
    const before = this.byOrg.get(key.orgId);
    if (before !== undefined) {
      this.endIdle(before, nowMs);
      if (before.size >= this.maxPerOrg) this.end(before.rvalues().next().value as Session);
    }
    const ofAgentBefore = this.byAgent.get(agentKey);
    if (ofAgentBefore !== undefined && ofAgentBefore.size >= this.maxPerAgent) this.end(ofAgentBefore.rvalues().next().value as Session);
    // The evictions above drop a map they empty, so both are looked up again.
    const sessions = getOrCreate(this.byOrg, key.orgId, this.maxPerOrg);
    const ofAgent = getOrCreate(this.byAgent, agentKey, this.maxPerAgent);
    const session = new Session(sessionKeyOf(key), key.orgId, agentKey, key.sessionId, nowMs);
    sessions.set(session.key, session);
    ofAgent.set(session.key, session);
    return session;
  }

  // The oldest-touched sessions are first: ending the idle ones stops at the first fresh one, and at two, so a call never pays for many.
  private endIdle(sessions: SessionOrder, nowMs: number): void {
    for (let i = 0; i < 2; i++) {
      const oldest = sessions.rvalues().next().value as Session | undefined;
      if (oldest === undefined || nowMs - oldest.touchedAt < this.idleMs) return;
      this.end(oldest);
    }
  }

  private end(session: Session): void {
    const sessions = this.byOrg.get(session.orgId);
    sessions?.delete(session.key);
    if (sessions !== undefined && sessions.size === 0) this.byOrg.delete(session.orgId);
    const ofAgent = this.byAgent.get(session.agentKey);
    ofAgent?.delete(session.key);
    if (ofAgent !== undefined && ofAgent.size === 0) this.byAgent.delete(session.agentKey);
  }
}

// lru-cache allocates its `max` slots up front: an order costs O(bound) memory at creation, one per
// organization and per agent with sessions, so the per-agent bound stays small (64 by default).
function getOrCreate(orders: Map<string, SessionOrder>, key: string, bound: number): SessionOrder {
  let order = orders.get(key);
  if (order === undefined) {
    order = new LRUCache<string, Session>({ max: bound + 1 });
    orders.set(key, order);
  }
  return order;
}

const EMPTY_CALLS: Readonly<Record<string, number>> = Object.freeze(Object.create(null) as Record<string, number>);

function agentKeyOf(key: Pick<SessionKey, 'orgId' | 'agentId'>): string {
  return `${key.orgId}\u0000${key.agentId}`;
}

function sessionKeyOf(key: SessionKey): string {
  return `${key.agentId}\u0000${key.sessionId}`;
}
