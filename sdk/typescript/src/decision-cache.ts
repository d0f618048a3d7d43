import { hash } from 'node:crypto';
import type { CheckRequest, GatewayDecision } from './transport';

interface Entry {
  decision: GatewayDecision;
  expiresAt: number;
}

/**
 * Decisions the gateway marked cacheable, keyed by the policy version they were made on and a
 * hash of the question (agent, plugin, function, args, context, tier). A newer policy version
 * (from an answer or a Subscribe event) empties it: every entry was made on an older one.
 */
export class DecisionCache {
  private readonly entries = new Map<string, Entry>();
  private currentVersion = 0;

  constructor(private readonly maxEntries = 10_000) {}

  /** The newest policy version seen. */
  get version(): number {
    return this.currentVersion;
  }

  /**
   * The hash of everything a decision depends on that the SDK sends, over its JSON: the same
   * question asked with its keys in another order is only a cache miss, never a wrong answer.
   */
  static hashOf(request: CheckRequest): string {
    return hash('sha256', JSON.stringify([request.agentId, request.plugin, request.function, request.args, request.context, request.trustTier]), 'base64url');
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
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(`${decision.policyVersion}:${hash}`, { decision, expiresAt: Date.now() + decision.cacheTtlMs });
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
