import { Injectable } from '@nestjs/common';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { AppConfig } from '../../core/config/app-config';
import { AppError } from '../../core/common/app-error';
import { ActorClaim, toActor } from '../../core/decision/agent-token-claims';
import { KeyRing } from '../signing-keys/key-ring';

/**
 * The JWT `typ` of a delegation grant. Agent tokens carry `JWT`, and AgentTokenVerifier refuses
 * any other type, so a grant is never accepted where an agent token is expected.
 */
export const GRANT_TYPE_HEADER = 'delegation-grant+jwt';

/** What a delegator grants, before the delegate redeems it. */
export interface GrantClaims {
  /** The delegator (RFC 8693's subject). */
  sub: string;
  org: string;
  /** Whom the delegator acts for, if it is itself a delegate. */
  act?: ActorClaim;
  /** The only agent that may redeem the grant (RFC 8693 `may_act`). */
  mayAct: string;
  scope?: string[];
  exp: number;
}

/**
 * Delegation grants (RFC 8693 token exchange, docs/security.md "Identity and delegation"): a delegator gets a
 * grant naming the delegate, never a token that acts as the delegate. Only the delegate can turn
 * it into an access token, by presenting its own agent token as `actor_token`.
 */
@Injectable()
export class DelegationGrants {
  constructor(
    private readonly config: AppConfig,
    private readonly keyRing: KeyRing,
  ) {}

  /** Signs a grant that expires at `exp` (seconds since the epoch). */
  async sign(grant: GrantClaims): Promise<string> {
    const key = this.keyRing.signingKey();
    const claims: Record<string, unknown> = { org: grant.org, may_act: { sub: grant.mayAct } };
    if (grant.act) claims.act = grant.act;
    if (grant.scope) claims.scope = grant.scope;
    return new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: GRANT_TYPE_HEADER })
      .setSubject(grant.sub)
      .setIssuer(this.config.http.publicUrl)
      .setIssuedAt()
      .setExpirationTime(grant.exp)
      .sign(key.privateKey);
  }

  /** The claims of a valid, unexpired grant signed by this deployment, else a 400 naming the problem. */
  async verify(grant: string): Promise<GrantClaims> {
    try {
      const { payload } = await jwtVerify(grant, async (header) => (await this.keyRing.verificationKey(header.kid)) ?? new Uint8Array(), {
        issuer: this.config.http.publicUrl,
        typ: GRANT_TYPE_HEADER,
        algorithms: ['EdDSA', 'ES256'],
        requiredClaims: ['sub', 'exp'],
      });
      const mayAct = (payload.may_act as { sub?: unknown } | undefined)?.sub;
      if (typeof mayAct !== 'string' || typeof payload.org !== 'string') throw new Error('malformed grant');
      const scope = payload.scope;
      if (scope !== undefined && !(Array.isArray(scope) && scope.every((glob) => typeof glob === 'string'))) throw new Error('malformed scope');
      return { sub: payload.sub!, org: payload.org, act: toActor(payload.act), mayAct, scope: scope as string[] | undefined, exp: payload.exp! };
    } catch (error) {
      const expired = error instanceof joseErrors.JWTExpired;
      throw AppError.invalid(expired ? 'subject_token: the delegation grant has expired' : 'subject_token is not a valid delegation grant');
    }
  }
}
