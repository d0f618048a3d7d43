/** What the table needs of a session. */
export interface TableSession {
  readonly id: string;
  readonly agentId: string;
  /** Milliseconds since the epoch of its last request. */
  usedMs: number;
  /** Ends the session (its upstream session too); called once, when it is evicted. */
  end(reason: 'idle' | 'evicted'): void;
}

/** The bounds of the table (docs/mcp.md, "Sessions"). */
export interface SessionBounds {
  /** Sessions kept at once, across agents. */
  maxSessions: number;
  /** Sessions one agent keeps at once: its next `initialize` ends its least recently used one. */
  maxPerAgent: number;
  /** A session idle this long is ended. */
  idleMs: number;
}

/**
 * The open MCP sessions, by id, bounded in total and per agent. Both orders are maps in
 * least-recently-used order (a use moves the session to the end), so every operation is O(1):
 * a lookup, a touch, an eviction (the head of the agent's map, or of the whole table, whichever
 * bound is met) and the idle sweep's step (the head of the whole table). What is evicted depends
 * only on what is open now, never on how many sessions were ever opened.
 */
export class McpSessionTable<S extends TableSession> {
  private readonly all = new Map<string, S>();
  private readonly byAgent = new Map<string, Map<string, S>>();

  constructor(private readonly bounds: SessionBounds) {}

  get size(): number {
    return this.all.size;
  }

  /** The session of that id, marked used now; undefined when unknown, ended or idle. */
  use(id: string, nowMs = Date.now()): S | undefined {
    const session = this.all.get(id);
    if (session === undefined) return undefined;
    if (nowMs - session.usedMs >= this.bounds.idleMs) {
      this.evict(session, 'idle');
      return undefined;
    }
    session.usedMs = nowMs;
    this.moveToEnd(this.all, session);
    this.moveToEnd(this.agentSessions(session.agentId), session);
    return session;
  }

  /** Adds a session, ending the agent's least recently used one at its bound, then the table's at its own. */
  add(session: S, nowMs = Date.now()): void {
    this.sweep(nowMs);
    const mine = this.agentSessions(session.agentId);
    if (mine.size >= this.bounds.maxPerAgent) this.evict(mine.values().next().value!, 'evicted');
    if (this.all.size >= this.bounds.maxSessions) this.evict(this.all.values().next().value!, 'evicted');
    this.all.set(session.id, session);
    mine.set(session.id, session);
  }

  /** Forgets a session that ended on its own (the agent's DELETE, its upstream gone). */
  remove(id: string): void {
    const session = this.all.get(id);
    if (session === undefined) return;
    this.all.delete(id);
    const mine = this.byAgent.get(session.agentId);
    mine?.delete(id);
    if (mine?.size === 0) this.byAgent.delete(session.agentId);
  }

  /** Ends the idle sessions at the head of the table; each step is O(1) and stops at the first session in use. */
  sweep(nowMs = Date.now()): void {
    for (let head = this.all.values().next().value; head !== undefined && nowMs - head.usedMs >= this.bounds.idleMs; head = this.all.values().next().value) {
      this.evict(head, 'idle');
    }
  }

  /** Every open session, for shutdown. */
  drain(): S[] {
    const sessions = [...this.all.values()];
    this.all.clear();
    this.byAgent.clear();
    return sessions;
  }

  private evict(session: S, reason: 'idle' | 'evicted'): void {
    this.remove(session.id);
    session.end(reason);
  }

  private agentSessions(agentId: string): Map<string, S> {
    let mine = this.byAgent.get(agentId);
    if (mine === undefined) {
      mine = new Map();
      this.byAgent.set(agentId, mine);
    }
    return mine;
  }

  private moveToEnd(map: Map<string, S>, session: S): void {
    map.delete(session.id);
    map.set(session.id, session);
  }
}
