import { LRUCache } from 'lru-cache';
import type { AuthenticatedAgent } from '../core/decision/agent-authenticator';
import type { BundleContent } from '../core/edge-protocol/bundle-format';

/** Most tokens remembered (a sidecar serves a handful of agents); past it the least recently used is forgotten. */
const MAX_TOKENS = 10_000;

/**
 * The agents authenticated under the bundle in force, by Authorization header. Everything
 * AgentAuthenticator decides (signature, issuer, the agent and its delegators present and
 * unrevoked) depends only on the token and the bundle, except expiry: so while the same bundle
 * object is in force, a token seen before stands for the same agent until it expires, and a
 * request skips the authenticator's promises and lookups. A new bundle (a revocation, a tier
 * change, new keys) empties the cache.
 */
export class AuthenticatedAgents {
  private bundle: BundleContent | null = null;
  private readonly agents = new LRUCache<string, AuthenticatedAgent>({ max: MAX_TOKENS });

  /** The agent of this header under `bundle`, if known and its token has not expired. */
  get(authorization: string | undefined, bundle: BundleContent | null, nowMs: number): AuthenticatedAgent | undefined {
    if (authorization === undefined || bundle !== this.bundle) return undefined;
    const agent = this.agents.get(authorization);
    return agent !== undefined && agent.claims.exp * 1000 > nowMs ? agent : undefined;
  }

  /** Remembers an agent the authenticator accepted under `bundle`. */
  set(authorization: string | undefined, bundle: BundleContent | null, agent: AuthenticatedAgent): void {
    if (authorization === undefined || bundle === null) return;
    if (bundle !== this.bundle) {
      this.agents.clear();
      this.bundle = bundle;
    }
    this.agents.set(authorization, agent);
  }
}
