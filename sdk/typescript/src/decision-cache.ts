import { hash } from 'node:crypto';
import type { CheckRequest, GatewayDecision } from './transport';

interface Entry {
  decision: GatewayDecision;
  expiresAt: number;
  /** Its place in the insertion ring, which says what a full cache evicts. */
  slot: number;
}

/**
 * Decisions the gateway marked cacheable, keyed by the policy version they were made on and a
 * hash of the question (agent, plugin, function, args, context, tier, session). A newer policy
 * version (from an answer or a Subscribe event) empties it: every entry was made on an older one.
 *
 * Bound: `maxEntries` (default 10,000). Eviction: when full, the entry put longest ago goes
 * (first in, first out, through a ring of keys the size of the bound); an expired entry goes when
 * it is next asked for. Cost: get and put are O(1) whatever the cache went through before (no
 * scan of the Map's insertion order, whose deleted slots V8 skips one by one until it rehashes);
 * emptying it is one Map.clear().
 */
export class DecisionCache {
  private readonly entries = new Map<string, Entry>();
  /** The key put in each slot last; a slot whose key now names an entry of another slot is free. */
  private readonly ring: string[];
  private nextSlot = 0;
  private currentVersion = 0;

  constructor(private readonly maxEntries = 10_000) {
    this.ring = new Array<string>(maxEntries);
  }

  /** The newest policy version seen. */
  get version(): number {
    return this.currentVersion;
  }

  /**
   * The hash of everything a decision depends on that the SDK sends, over its JSON: the same
   * question asked with its keys in another order is only a cache miss, never a wrong answer.
   */
  static hashOf(request: CheckRequest): string {
    return hash('sha256', JSON.stringify([request.agentId, request.plugin, request.function, request.args, request.context, request.trustTier, request.sessionId ?? '']), 'base64url');
  }

  /** The cached decision for `hash` on the current policy version, if still fresh. */
  get(hash: string): GatewayDecision | undefined {
    const key = `${this.currentVersion}:${hash}`;
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > Date.now()) return entry.decision;
    this.entries.delete(key);
    return undefined;
  }

  /** Keeps `decision` if the gateway allowed it and it was made on the newest version seen. */
  put(hash: string, decision: GatewayDecision): void {
    if (decision.policyVersion > this.currentVersion) this.invalidate(decision.policyVersion);
    if (!decision.cacheable || decision.cacheTtlMs <= 0 || decision.policyVersion < this.currentVersion) return;
    const key = `${decision.policyVersion}:${hash}`;
    const expiresAt = Date.now() + decision.cacheTtlMs;
    const present = this.entries.get(key);
    if (present !== undefined) {
      this.entries.set(key, { decision, expiresAt, slot: present.slot });
      return;
    }
    const slot = this.nextSlot;
    this.nextSlot = (slot + 1) % this.maxEntries;
    const previous = this.ring[slot];
    // The slot's previous key is evicted only if its entry still lives in this slot: it may have
    // expired, been emptied by a new version, or been put again into another slot since.
    if (previous !== undefined && this.entries.get(previous)?.slot === slot) this.entries.delete(previous);
    this.ring[slot] = key;
    this.entries.set(key, { decision, expiresAt, slot });
  }

  /** Empties the cache; `version` (a Subscribe event's) becomes the newest known. */
  invalidate(version = this.currentVersion): void {
    this.entries.clear();
    this.currentVersion = Math.max(this.currentVersion, version);
  }

  /**
   * A Subscribe stream is opened from `version`, an answer's. Below the newest seen, the
   * gateway's versions went backwards (its database restored from a backup): every answer
   * would stay below the newest seen, and none was cached again until the organization passed
   * it. The cache starts again from `version`; the stream replays whatever came after it.
   */
  resumeFrom(version: number): void {
    if (version >= this.currentVersion) return;
    this.entries.clear();
    this.currentVersion = version;
  }

  /** How many entries it holds. */
  get size(): number {
    return this.entries.size;
  }
}
