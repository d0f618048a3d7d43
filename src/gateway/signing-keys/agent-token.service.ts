import { Injectable } from '@nestjs/common';
import { SignJWT } from 'jose';
import { AppConfig } from '../../core/config/app-config';
import type { ActorClaim } from '../../core/decision/agent-token-claims';
import { KeyRing } from './key-ring';
import { TokenIssuer } from './token-issuer';

export interface TokenSubject {
  id: string;
  name: string;
  trustTier: string;
  tags: readonly string[];
  orgId: string;
}

/** What narrows a delegated token beyond its lifetime. */
export interface TokenLimits {
  /** Action globs the token is limited to. */
  scope?: readonly string[];
  /** Latest expiry allowed, seconds since the epoch (a delegated token never outlives its parent). */
  notAfter?: number;
}

export interface IssuedToken {
  token: string;
  expiresAt: Date;
}

/** Issues agent tokens (asymmetric JWT, EdDSA or ES256); AgentTokenVerifier verifies them. */
@Injectable()
export class AgentTokenService {
  constructor(
    private readonly config: AppConfig,
    private readonly keyRing: KeyRing,
    private readonly issuer: TokenIssuer,
  ) {}

  /**
   * Signs a new token for an agent with the configured lifetime (or `ttlMs`); a delegated token
   * also carries the `act` chain and its limits.
   */
  async issue(subject: TokenSubject, ttlMs = this.config.auth.agentTokenTtlMs, act?: ActorClaim, limits: TokenLimits = {}): Promise<IssuedToken> {
    const key = this.keyRing.signingKey();
    const nowSeconds = Math.floor(Date.now() / 1000);
    const exp = Math.min(nowSeconds + Math.max(1, Math.round(ttlMs / 1000)), limits.notAfter ?? Number.MAX_SAFE_INTEGER);
    const scope = limits.scope;
    const claims: Record<string, unknown> = { name: subject.name, trust: subject.trustTier, tier: subject.trustTier, tags: [...subject.tags], org: subject.orgId };
    if (act) claims.act = act;
    if (scope) claims.scope = [...scope];
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
      .setSubject(subject.id)
      .setIssuer(this.issuer.url)
      .setIssuedAt(nowSeconds)
      .setExpirationTime(exp)
      .sign(key.privateKey);
    const expiresAt = new Date(exp * 1000);
    await this.keyRing.publishUntil(key.kid, expiresAt);
    return { token, expiresAt };
  }
}
