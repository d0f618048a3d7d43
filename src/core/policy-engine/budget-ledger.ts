import { LRUCache } from 'lru-cache';
import type { BudgetAnswer, BudgetHold, BudgetLeaseAnswer, BudgetLeasing, BudgetLedger } from './types';

/** Options of the in-process ledger. */
export interface InMemoryBudgetLedgerOptions {
  /** Most budget totals kept; the least recently used beyond this are dropped. Default 100 000. */
  readonly maxKeys?: number;
  /** Most reservations one total keeps in its window; past it the budget reads as spent. Default 100 000. */
  readonly maxEntriesPerKey?: number;
  /** How long a reservation can be settled, ms; after that its reserved cost stands. Default 5 minutes. */
  readonly settleWithinMs?: number;
}

interface Entry {
  readonly id: string;
  readonly ts: number;
  cost: number;
  readonly openUntil: number;
}

/** One budget's reservations in its window, oldest first, and their running total. */
class Totals {
  readonly entries: Entry[] = [];
  head = 0;
  total = 0;
  readonly byId = new Map<string, Entry>();

  /** Drops what left the window: amortised O(1) per reservation, each leaves once. */
  expire(nowMs: number, windowMs: number): void {
    while (this.head < this.entries.length && nowMs - this.entries[this.head].ts >= windowMs) {
      const entry = this.entries[this.head++];
      this.total -= entry.cost;
      this.byId.delete(entry.id);
    }
    if (this.head === this.entries.length) {
      this.entries.length = 0;
      this.head = 0;
      this.total = 0;
    } else if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries.splice(0, this.head);
      this.head = 0;
    }
  }

  get size(): number {
    return this.entries.length - this.head;
  }

  oldest(): Entry | undefined {
    return this.entries[this.head];
  }
}

/**
 * Exact sliding-window budgets in this process: each total is the sum of the reservations made
 * in the window, each at its settled (or still reserved) cost. Reserve, settle and expiry cost
 * O(1) amortised; memory is bounded by maxKeys totals of at most maxEntriesPerKey reservations.
 */
export class InMemoryBudgetLedger implements BudgetLedger, BudgetLeasing {
  private readonly totals: LRUCache<string, Totals>;
  private readonly maxKeys: number;
  private readonly maxEntriesPerKey: number;
  private readonly settleWithinMs: number;
  private sequence = 0;

  constructor(options: InMemoryBudgetLedgerOptions = {}) {
    this.maxKeys = options.maxKeys ?? 100_000;
    this.totals = new LRUCache<string, Totals>({ max: this.maxKeys });
    this.maxEntriesPerKey = options.maxEntriesPerKey ?? 100_000;
    this.settleWithinMs = options.settleWithinMs ?? 300_000;
  }

  reserve(key: string, cost: number, limit: number, windowMs: number, nowMs: number): BudgetAnswer {
    const totals = this.touch(key, nowMs, windowMs);
    const wait = this.waitFor(totals, cost, limit, windowMs, nowMs);
    if (wait > 0) return { retryAfterMs: wait };
    const entry: Entry = { id: `${nowMs.toString(36)}.${(++this.sequence).toString(36)}`, ts: nowMs, cost, openUntil: nowMs + this.settleWithinMs };
    totals.entries.push(entry);
    totals.byId.set(entry.id, entry);
    totals.total += cost;
    return { id: entry.id };
  }

  lease(key: string, owner: string, least: number, want: number, limit: number, windowMs: number, leaseMs: number, nowMs: number): BudgetLeaseAnswer {
    const totals = this.touch(key, nowMs, windowMs);
    const wait = this.waitFor(totals, least, limit, windowMs, nowMs);
    if (wait > 0) return { retryAfterMs: wait };
    const granted = Math.max(least, Math.min(want, limit - totals.total));
    // Dated at the lease's end and pushed last: entries behind it may leave the window late, never early.
    const ts = nowMs + leaseMs;
    const entry: Entry = { id: `${owner}/${ts.toString(36)}.${(++this.sequence).toString(36)}`, ts, cost: granted, openUntil: ts + windowMs };
    totals.entries.push(entry);
    totals.byId.set(entry.id, entry);
    totals.total += granted;
    return { id: entry.id, granted };
  }

  peek(key: string, cost: number, limit: number, windowMs: number, nowMs: number): BudgetAnswer {
    const totals = this.totals.peek(key);
    if (totals === undefined) return cost <= limit ? { id: '' } : { retryAfterMs: windowMs };
    totals.expire(nowMs, windowMs);
    const wait = this.waitFor(totals, cost, limit, windowMs, nowMs);
    return wait > 0 ? { retryAfterMs: wait } : { id: '' };
  }

  settle(hold: BudgetHold, actualCost: number, nowMs: number): boolean {
    const entry = this.totals.peek(hold.key)?.byId.get(hold.id);
    if (entry === undefined || nowMs > entry.openUntil) return false;
    this.totals.peek(hold.key)!.total += actualCost - entry.cost;
    entry.cost = actualCost;
    return true;
  }

  /** The window's total of a budget (tests, the sidecar's lease). */
  spent(key: string, windowMs: number, nowMs: number): number {
    const totals = this.totals.peek(key);
    if (totals === undefined) return 0;
    totals.expire(nowMs, windowMs);
    return totals.total;
  }

  // A total that cannot take the cost waits for its oldest reservation to leave the window.
  private waitFor(totals: Totals, cost: number, limit: number, windowMs: number, nowMs: number): number {
    if (totals.total + cost <= limit + 1e-9 && totals.size < this.maxEntriesPerKey) return 0;
    const oldest = totals.oldest();
    return oldest === undefined ? windowMs : Math.max(1, oldest.ts + windowMs - nowMs);
  }

  private touch(key: string, nowMs: number, windowMs: number): Totals {
    // `get` makes the key the most recently used; past maxKeys the least recently used goes, in O(1).
    let totals = this.totals.get(key);
    if (totals === undefined) {
      totals = new Totals();
      this.totals.set(key, totals);
    }
    totals.expire(nowMs, windowMs);
    return totals;
  }
}
