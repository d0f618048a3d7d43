import { LRUCache } from 'lru-cache';
/** How long a credential found unknown or revoked is refused without asking the database again. */
export const REFUSED_CREDENTIAL_TTL_MS = 30_000;
/** At most this many refused credentials are remembered; past it the oldest is forgotten first. */
export const MAX_REFUSED_CREDENTIALS = 5_000;

/**
 * Database lookups of a secret credential (API key, admin token) by its hash, so that a flood of
 * bad credentials cannot take every pooled connection: a hash the database did not know is
 * refused from memory for REFUSED_CREDENTIAL_TTL_MS (at most MAX_REFUSED_CREDENTIALS of them,
 * keyed by hash: the secret itself is never kept), and concurrent lookups of one hash share one
 * query. A generated credential (256 random bits) cannot have been presented, so refused, before
 * it exists; one that can (ADMIN_TOKEN, chosen by people and adopted at a start) must be followed
 * by `forgetRefused` on every instance, so it works at once (OrganizationsService does this with
 * the `admintokens.changed` cluster event).
 */
export class CredentialLookups<T> {
  /** Hash → when its refusal expires (ms since the epoch). */
  private readonly refused: LRUCache<string, number>;
  private readonly inFlight = new Map<string, Promise<T | null>>();
  /** Counts `forgetRefused` calls: a lookup that began before one may have missed the new row. */
  private generation = 0;

  constructor(
    private readonly ttlMs = REFUSED_CREDENTIAL_TTL_MS,
    maxRefused = MAX_REFUSED_CREDENTIALS,
  ) {
    this.refused = new LRUCache({ max: maxRefused });
  }

  /** What `load` finds for `hash`, or null; null from memory while the hash is refused. */
  lookup(hash: string, load: () => Promise<T | null>, nowMs = Date.now()): Promise<T | null> {
    if (this.isRefused(hash, nowMs)) return Promise.resolve(null);
    const pending = this.inFlight.get(hash);
    if (pending !== undefined) return pending;
    const generation = this.generation;
    const lookup = load().then(
      (found) => {
        this.settle(hash, lookup);
        if (found === null && generation === this.generation) this.refuse(hash, nowMs);
        return found;
      },
      (error: unknown) => {
        this.settle(hash, lookup);
        throw error;
      },
    );
    this.inFlight.set(hash, lookup);
    return lookup;
  }

  /** Forgets every refusal and the lookups under way: a credential issued now must not meet them. */
  forgetRefused(): void {
    this.generation++;
    this.refused.clear();
    this.inFlight.clear();
  }

  /**
   * Lets later calls start lookups of their own rather than share those under way, which may
   * have read a row before it was revoked: a revoked credential must fail its next call.
   */
  forgetLookupsUnderWay(): void {
    this.inFlight.clear();
  }

  private isRefused(hash: string, nowMs: number): boolean {
    const expiresMs = this.refused.peek(hash);
    if (expiresMs === undefined) return false;
    if (expiresMs > nowMs) return true;
    this.refused.delete(hash);
    return false;
  }

  private refuse(hash: string, nowMs: number): void {
    this.refused.set(hash, nowMs + this.ttlMs);
  }

  private settle(hash: string, lookup: Promise<T | null>): void {
    if (this.inFlight.get(hash) === lookup) this.inFlight.delete(hash);
  }
}
