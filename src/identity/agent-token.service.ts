import { Injectable } from '@nestjs/common';
import { errors as joseErrors, jwtVerify, JWTPayload, SignJWT } from 'jose';
import { AppConfig } from '../config/app-config';
import { KeyRing } from './key-ring';

/** Claims of an agent token (SPEC.md "Agent token (JWT) claims"). */
export interface AgentTokenClaims {
  sub: string;
  name: string;
  /** Trust tier, under both names SPEC.md describes. */
  trust: string;
  tier: string;
  tags: string[];
  org: string;
  iat: number;
  exp: number;
  iss: string;
  /** Delegation (RFC 8693 style): `{sub: <delegating agent>, act?: {...}}`, innermost is the original delegator. */
  act?: ActorClaim;
}

export interface ActorClaim {
  sub: string;
  act?: ActorClaim;
}

export interface TokenSubject {
  id: string;
  name: string;
  trustTier: string;
  tags: readonly string[];
  orgId: string;
}

export interface IssuedToken {
  token: string;
  expiresAt: Date;
}

export class InvalidTokenError extends Error {}

const MAX_CACHED_TOKENS = 50_000;
/**
 * Verified tokens are found by their last characters (the end of the signature, 96 random bits)
 * and then compared whole: a Map keyed by the whole token hashes every character of the new
 * string each request carries, about 1 µs for a typical token.
 */
const CACHE_KEY_CHARS = 16;
const ALGORITHMS = ['EdDSA', 'ES256'];

/**
 * Issues and verifies agent tokens (asymmetric JWT, EdDSA or ES256). Verified tokens are cached
 * until they expire, so the proxy pays for one signature check per token, not per request;
 * revocation is checked separately on every request against the agent's current record.
 */
@Injectable()
export class AgentTokenService {
  private readonly verified = new Map<string, { token: string; claims: AgentTokenClaims }>();

  constructor(
    private readonly config: AppConfig,
    private readonly keyRing: KeyRing,
  ) {}

  /** Signs a new token for an agent with the configured lifetime (or `ttlMs`). */
  async issue(subject: TokenSubject, ttlMs = this.config.auth.agentTokenTtlMs, act?: ActorClaim): Promise<IssuedToken> {
    const key = this.keyRing.signingKey();
    const nowSeconds = Math.floor(Date.now() / 1000);
    const exp = nowSeconds + Math.max(1, Math.round(ttlMs / 1000));
    const claims: Record<string, unknown> = { name: subject.name, trust: subject.trustTier, tier: subject.trustTier, tags: [...subject.tags], org: subject.orgId };
    if (act) claims.act = act;
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
      .setSubject(subject.id)
      .setIssuer(this.config.http.publicUrl)
      .setIssuedAt(nowSeconds)
      .setExpirationTime(exp)
      .sign(key.privateKey);
    return { token, expiresAt: new Date(exp * 1000) };
  }

  /** The claims of a valid, unexpired token; sync when the token was verified before. */
  verify(token: string, nowMs: number): AgentTokenClaims | Promise<AgentTokenClaims> {
    const key = token.slice(-CACHE_KEY_CHARS);
    const cached = this.verified.get(key);
    if (cached !== undefined && cached.token === token) {
      if (cached.claims.exp * 1000 > nowMs) return cached.claims;
      this.verified.delete(key);
      throw new InvalidTokenError('token expired');
    }
    return this.verifySignature(token);
  }

  private async verifySignature(token: string): Promise<AgentTokenClaims> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, (header) => this.keyFor(header.kid), {
        issuer: this.config.http.publicUrl,
        algorithms: ALGORITHMS,
        requiredClaims: ['sub', 'exp', 'iat'],
      }));
    } catch (error) {
      throw new InvalidTokenError(error instanceof joseErrors.JWTExpired ? 'token expired' : 'invalid token');
    }
    const claims = toClaims(payload);
    if (this.verified.size >= MAX_CACHED_TOKENS) this.verified.delete(this.verified.keys().next().value!);
    // A different token ending alike (never seen in practice) just takes the place.
    this.verified.set(token.slice(-CACHE_KEY_CHARS), { token, claims });
    return claims;
  }

  private async keyFor(kid: string | undefined) {
    const key = await this.keyRing.verificationKey(kid);
    if (key === undefined) throw new InvalidTokenError('unknown signing key');
    return key;
  }
}

function toClaims(payload: JWTPayload): AgentTokenClaims {
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
  };
}

function toActor(value: unknown, depth = 0): ActorClaim | undefined {
  if (depth > 16 || typeof value !== 'object' || value === null) return undefined;
  const sub = (value as { sub?: unknown }).sub;
  if (typeof sub !== 'string') return undefined;
  const act = toActor((value as { act?: unknown }).act, depth + 1);
  return act ? { sub, act } : { sub };
}
