import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { LOGGER } from '../core/logging/logging.module';
import type { BudgetAnswer, BudgetHold, BudgetLedger } from '../core/policy-engine/types';
import { GatewayLink } from './gateway-link';

/** What a budget the edge cannot spend tells the caller to wait, ms, when the gateway names no time. */
const EDGE_RETRY_MS = 30_000;
/** Longest a decision waits for the gateway to grant a lease, ms; then the budget reads as spent. */
const LEASE_REQUEST_TIMEOUT_MS = 2_000;
/** Budgets held at once (one lease each); past this the least recently used lease is returned early. */
const MAX_LEASES = 10_000;
/** Leases waiting to be returned while the gateway is away; past this the oldest stays spent at the gateway (never more than granted). */
const MAX_RETURNS = 10_000;
/** How often expired leases are returned, ms. */
const RETURN_INTERVAL_MS = 1_000;

/** A slice of one budget the gateway granted this sidecar. */
interface Lease {
  readonly id: string;
  readonly key: string;
  readonly granted: number;
  spent: number;
  /** Date.now() past which nothing more is spent of it: the time it was asked for plus its term, so never after the gateway's own end. */
  readonly untilMs: number;
}

interface GrantedLease {
  leaseId: string;
  granted: number;
  expiresInMs: number;
}

/**
 * Budgets at the edge (docs/sidecar.md "Budgets"): each budget is spent from a lease, a slice of
 * the gateway's total that the gateway reserved for this sidecar for a term. A call reserves
 * from the lease; one that does not fit asks the gateway for a new lease (returning the old one
 * with what was spent of it), and while the gateway is away nothing beyond the lease in hand is
 * admitted: the fleet together never spends more than the budget. Leases past their term, or
 * pushed out by MAX_LEASES, are returned with what was spent, at once or when the gateway is back.
 * Reserve, peek and settle cost O(1); memory is bounded by MAX_LEASES and MAX_RETURNS.
 */
@Injectable()
export class EdgeBudgetLedger implements BudgetLedger, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly leases = new LRUCache<string, Lease>({ max: MAX_LEASES, disposeAfter: (lease, _key, reason) => reason === 'evict' && this.toReturn(lease) });
  /** Leases to return, by id, oldest first. */
  private readonly returns = new Map<string, Lease>();
  /** Lease requests in flight, one per budget: concurrent calls wait for the same answer. */
  private readonly asking = new Map<string, Promise<BudgetAnswer>>();
  private timer: NodeJS.Timeout | undefined;
  private returning = false;

  constructor(
    private readonly link: GatewayLink,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.returnExpired(Date.now()), RETURN_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    for (const lease of [...this.leases.values()]) this.toReturn(lease);
    this.leases.clear();
    await this.flushReturns();
  }

  reserve(key: string, cost: number, _limit: number, _windowMs: number, nowMs: number): BudgetAnswer | Promise<BudgetAnswer> {
    const spent = this.spend(key, cost, nowMs);
    if (spent !== undefined) return spent;
    // Away: only the lease in hand may be spent, and it did not fit.
    if (!this.link.reachable) return { retryAfterMs: EDGE_RETRY_MS };
    return this.renewed(key, cost);
  }

  peek(key: string, cost: number, _limit: number, _windowMs: number, nowMs: number): BudgetAnswer {
    const lease = this.leases.peek(key);
    return lease !== undefined && fits(lease, cost, nowMs) ? { id: '' } : { retryAfterMs: EDGE_RETRY_MS };
  }

  settle(hold: BudgetHold, actualCost: number): boolean {
    // Each reservation is settled once by the decision core (a release, or its outcome's cost), so its hold's cost is what it took of the lease.
    const current = this.leases.peek(hold.key);
    const lease = current?.id === hold.id ? current : this.returns.get(hold.id);
    if (lease === undefined) return false;
    lease.spent = Math.max(0, lease.spent + actualCost - hold.cost);
    return true;
  }

  /** What the sidecar's /health shows: leases held and waiting to be returned. */
  state(): { held: number; returning: number } {
    return { held: this.leases.size, returning: this.returns.size };
  }

  private spend(key: string, cost: number, nowMs: number): BudgetAnswer | undefined {
    const lease = this.leases.get(key);
    if (lease === undefined || !fits(lease, cost, nowMs)) return undefined;
    lease.spent += cost;
    return { id: lease.id };
  }

  private renewed(key: string, cost: number): Promise<BudgetAnswer> {
    const inFlight = this.asking.get(key);
    if (inFlight !== undefined) return inFlight.then(() => this.spend(key, cost, Date.now()) ?? { retryAfterMs: 1_000 });
    const asked = this.askLease(key, cost).finally(() => this.asking.delete(key));
    this.asking.set(key, asked);
    return asked;
  }

  private async askLease(key: string, cost: number): Promise<BudgetAnswer> {
    const old = this.leases.peek(key);
    if (old !== undefined) {
      this.leases.delete(key);
      this.toReturn(old);
    }
    const askedAt = Date.now();
    const answer = await this.link.postJson('/api/v1/budget-leases', { key, least: cost }, LEASE_REQUEST_TIMEOUT_MS);
    void this.flushReturns();
    if (answer === 'unreachable') return { retryAfterMs: EDGE_RETRY_MS };
    if (answer.status !== 200) return { retryAfterMs: retryAfterOf(answer.text) };
    const granted = JSON.parse(answer.text) as GrantedLease;
    this.leases.set(key, { id: granted.leaseId, key, granted: granted.granted, spent: 0, untilMs: askedAt + granted.expiresInMs });
    return this.spend(key, cost, Date.now()) ?? { retryAfterMs: 1_000 };
  }

  private toReturn(lease: Lease): void {
    if (this.returns.size >= MAX_RETURNS) {
      const oldest = this.returns.keys().next().value as string;
      this.returns.delete(oldest);
      this.logger.warn({ leaseId: oldest }, 'budget lease not returned: the gateway counts all of it as spent');
    }
    this.returns.set(lease.id, lease);
  }

  private async returnExpired(nowMs: number): Promise<void> {
    // Leases are in least-recently-used order, not by term: a full walk, bounded by MAX_LEASES, once a second.
    for (const lease of [...this.leases.values()]) {
      if (nowMs < lease.untilMs) continue;
      this.leases.delete(lease.key);
      this.toReturn(lease);
    }
    if (this.link.reachable) await this.flushReturns();
  }

  private async flushReturns(): Promise<void> {
    if (this.returning || this.returns.size === 0) return;
    this.returning = true;
    try {
      for (const lease of [...this.returns.values()]) {
        const answer = await this.link.postJson('/api/v1/budget-leases/return', { key: lease.key, leaseId: lease.id, spent: lease.spent }, LEASE_REQUEST_TIMEOUT_MS);
        // Kept for the next round: the gateway is away, or its budget totals are (503).
        if (answer === 'unreachable' || answer.status >= 500) return;
        // Returned, or refused for good (unknown, past its window: all of it stays spent); nothing is left to return.
        this.returns.delete(lease.id);
        if (answer.status !== 200) this.logger.warn({ leaseId: lease.id, status: answer.status }, 'budget lease return refused by the gateway: its grant counts as spent');
      }
    } finally {
      this.returning = false;
    }
  }
}

function fits(lease: Lease, cost: number, nowMs: number): boolean {
  return nowMs < lease.untilMs && lease.spent + cost <= lease.granted + 1e-9;
}

function retryAfterOf(text: string): number {
  try {
    const seconds = (JSON.parse(text) as { retry_after?: unknown }).retry_after;
    return typeof seconds === 'number' && seconds > 0 ? seconds * 1000 : EDGE_RETRY_MS;
  } catch {
    return EDGE_RETRY_MS;
  }
}
