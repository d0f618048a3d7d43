import { Inject, Injectable } from '@nestjs/common';
import type { KeyObject } from 'node:crypto';
import { errors as joseErrors, jwtVerify, JWTPayload } from 'jose';
import { LRUCache } from 'lru-cache';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { DECISION_SETTINGS, DecisionSettings, VERIFICATION_KEYS, VerificationKeySource } from './decision-sources';
import { AgentTokenClaims, InvalidTokenError, toClaims } from './agent-token-claims';

const MAX_CACHED_TOKENS = 50_000;
const ALGORITHMS = ['EdDSA', 'ES256'];
/** How far ahead of this clock a token's `iat` may be: clocks of instances and sidecars drift a little. */
export const MAX_CLOCK_SKEW_MS = 60_000;

/** A token whose signature was checked, with the key that checked it. */
interface VerifiedToken {
  claims: AgentTokenClaims;
  kid: string | undefined;
  key: KeyObject;
}

/**
 * Verifies agent tokens against a set of trusted public keys: the gateway's key ring, or at the
 * edge the keys of the signed bundle. It never needs a private key. Verified tokens are cached
 * until they expire, so a signature is checked once per token, not per request, as long as the
 * key that checked it is still the trusted key of its `kid` (a bundle that drops or replaces a
 * key sends its tokens back through the signature check); whether the agent is still allowed in
 * (revocation) is the caller's check, on every request.
 */
@Injectable()
export class AgentTokenVerifier {
  private readonly verified = new LRUCache<string, VerifiedToken>({ max: MAX_CACHED_TOKENS });

  constructor(
    @Inject(VERIFICATION_KEYS) private readonly keys: VerificationKeySource,
    @Inject(DECISION_SETTINGS) private readonly settings: DecisionSettings,
  ) {}

  /**
   * The claims of a valid, unexpired token, or an InvalidTokenError; a token issued more than
   * MAX_CLOCK_SKEW_MS after `nowMs` (`iat` in the future) is a 401 AppError saying so: no issuer
   * with a sound clock makes one, so it was signed by a wrong clock or made to look fresher than
   * it is.
   */
  async verify(token: string, nowMs: number): Promise<AgentTokenClaims> {
    const cached = this.verified.get(token);
    if (cached === undefined) return this.verifySignature(token, nowMs);
    if (cached.claims.exp * 1000 <= nowMs) {
      this.verified.delete(token);
      throw new InvalidTokenError('token expired');
    }
    if ((await this.keys.verificationKey(cached.kid)) === cached.key) return cached.claims;
    this.verified.delete(token);
    return this.verifySignature(token, nowMs);
  }

  private async verifySignature(token: string, nowMs: number): Promise<AgentTokenClaims> {
    let payload: JWTPayload;
    let kid: string | undefined;
    let key: KeyObject | undefined;
    try {
      let typ: string | undefined;
      ({ payload, protectedHeader: { typ } } = await jwtVerify(
        token,
        async (header) => {
          kid = header.kid;
          key = await this.keyFor(header.kid);
          return key;
        },
        { issuer: this.settings.tokenIssuer, algorithms: ALGORITHMS, requiredClaims: ['sub', 'exp', 'iat'] },
      ));
      // Another kind of JWT signed with the same key (a delegation grant) is not an agent token.
      if (typ !== undefined && typ.toUpperCase() !== 'JWT') throw new InvalidTokenError('not an agent token');
    } catch (error) {
      throw new InvalidTokenError(error instanceof joseErrors.JWTExpired ? 'token expired' : 'invalid token');
    }
    const claims = toClaims(payload);
    if (claims.iat * 1000 > nowMs + MAX_CLOCK_SKEW_MS) {
      throw new AppError(ErrorCode.Unauthorized, `Token is issued in the future (iat ${claims.iat}, more than ${MAX_CLOCK_SKEW_MS / 1000} s ahead of this server's clock)`);
    }
    this.verified.set(token, { claims, kid, key: key! });
    return claims;
  }

  private async keyFor(kid: string | undefined) {
    const key = await this.keys.verificationKey(kid);
    if (key === undefined) throw new InvalidTokenError('unknown signing key');
    return key;
  }
}
