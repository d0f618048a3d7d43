import { LRUCache } from 'lru-cache';

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
 * The open MCP sessions, by id, bounded in total and per agent: an LRU of all (lru-cache, whose
 * operations are O(1) whatever was evicted before) and one LRU per agent. A use marks the session
 * most recent in both; an open past a bound ends the least recently used session of the agent, or
 * of all, whichever bound is met; the idle sweep ends sessions from the least recently used one,
 * O(1) a step, and stops at the first in use. What is evicted depends only on what is open now,
 * never on how many sessions were ever opened.
 */
export class McpSessionTable<S extends TableSession> {
  private readonly all: LRUCache<string, S>;
  private readonly byAgent = new Map<string, LRUCache<string, S>>();

  constructor(private readonly bounds: SessionBounds) {
    this.all = new LRUCache<string, S>({
      max: bounds.maxSessions,
      dispose: (session, id, reason) => {
        if (reason !== 'evict') return;
        this.dropFromAgent(session.agentId, id);
        session.end('evicted');
      },
    });
  }

  get size(): number {
    return this.all.size;
  }

  /** The session of that id, marked used now; undefined when unknown, ended or idle. */
  use(id: string, nowMs = Date.now()): S | undefined {
    const session = this.all.get(id);
    if (session === undefined) return undefined;
    if (nowMs - session.usedMs >= this.bounds.idleMs) {
      this.remove(id);
      session.end('idle');
      return undefined;
    }
    session.usedMs = nowMs;
    this.byAgent.get(session.agentId)?.get(id);
    return session;
  }

  /** Adds a session, ending the agent's least recently used one at its bound, then the table's at its own. */
  add(session: S, nowMs = Date.now()): void {
    this.sweep(nowMs);
    this.agentSessions(session.agentId).set(session.id, session);
    this.all.set(session.id, session);
  }

  /** Forgets a session that ended on its own (the agent's DELETE, its upstream gone). */
  remove(id: string): void {
    const session = this.all.peek(id);
    if (session === undefined) return;
    this.all.delete(id);
    this.dropFromAgent(session.agentId, id);
  }

  /** Ends the idle sessions from the least recently used one; each step is O(1) and stops at the first session in use. */
  sweep(nowMs = Date.now()): void {
    for (;;) {
      const head = this.all.rvalues().next().value;
      if (head === undefined || nowMs - head.usedMs < this.bounds.idleMs) return;
      this.remove(head.id);
      head.end('idle');
    }
  }

  /** Every open session, for shutdown. */
  drain(): S[] {
    const sessions = [...this.all.values()];
    for (const session of sessions) this.remove(session.id);
    return sessions;
  }

  private dropFromAgent(agentId: string, id: string): void {
    const mine = this.byAgent.get(agentId);
    if (mine === undefined) return;
    mine.delete(id);
    if (mine.size === 0) this.byAgent.delete(agentId);
  }

  private agentSessions(agentId: string): LRUCache<string, S> {
    let mine = this.byAgent.get(agentId);
    if (mine === undefined) {
      mine = new LRUCache<string, S>({
        max: this.bounds.maxPerAgent,
        dispose: (session, id, reason) => {
          if (reason !== 'evict') return;
          this.all.delete(id);
          session.end('evicted');
        },
      });
      this.byAgent.set(agentId, mine);
    }
    return mine;
  }
}
