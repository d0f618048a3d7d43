import type { JWTPayload } from 'jose';

/** Claims of an agent token (docs/architecture.md "Identity API, delegation and managed identity"). */
export interface AgentTokenClaims {
  sub: string;
  name: string;
  /** Trust tier, under both claim names (`trust` and `tier`). */
  trust: string;
  tier: string;
  tags: string[];
  org: string;
  iat: number;
  exp: number;
  iss: string;
  /** Delegation (RFC 8693 style): `{sub: <delegating agent>, act?: {...}}`, innermost is the original delegator. */
  act?: ActorClaim;
  /**
   * Action globs a delegated token is limited to (each hop can only narrow them); absent means
   * no limit beyond policy. Enforced before any policy is consulted (delegation-scope.ts).
   */
  scope?: string[];
}

export interface ActorClaim {
  sub: string;
  act?: ActorClaim;
}

export class InvalidTokenError extends Error {}

/** The typed claims of a verified payload. */
export function toClaims(payload: JWTPayload): AgentTokenClaims {
  const tags = Array.isArray(payload.tags) ? payload.tags.filter((tag): tag is string => typeof tag === 'string') : [];
  const tier = typeof payload.tier === 'string' ? payload.tier : typeof payload.trust === 'string' ? payload.trust : 'unverified';
  return {
    sub: payload.sub!,
    name: typeof payload.name === 'string' ? payload.name : '',
    trust: tier,
    tier,
    tags,
    org: typeof payload.org === 'string' ? payload.org : '',
    iat: payload.iat!,
    exp: payload.exp!,
    iss: payload.iss ?? '',
    act: toActor(payload.act),
    scope: toScope(payload.scope),
  };
}

/**
 * A scope claim as a list of globs. A claim that is present but not a list of strings is read
 * as an empty scope, which allows nothing: a malformed limit must never read as no limit.
 */
function toScope(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) return [];
  return value.every((glob) => typeof glob === 'string') ? (value as string[]) : [];
}

/** An `act` claim as a chain of actors, or undefined when it is not one (at most 16 deep). */
export function toActor(value: unknown, depth = 0): ActorClaim | undefined {
  if (depth > 16 || typeof value !== 'object' || value === null) return undefined;
  const sub = (value as { sub?: unknown }).sub;
  if (typeof sub !== 'string') return undefined;
  const act = toActor((value as { act?: unknown }).act, depth + 1);
  return act ? { sub, act } : { sub };
}
