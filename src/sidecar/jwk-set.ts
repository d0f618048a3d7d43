import type { KeyObject } from 'node:crypto';
import { importJWK, JWK } from 'jose';
import type { VerificationKeySource } from '../core/decision/decision-sources';

/**
 * A fixed set of public JWKs as a key source: what an edge sidecar trusts from its signed
 * bundle, or a test from keys it made. Keys without a `kid` cannot be named by a token and are
 * left out.
 */
export class JwkSet implements VerificationKeySource {
  private constructor(private readonly keys: ReadonlyMap<string, KeyObject>) {}

  /** Imports the public keys of a JWK list (private members are refused). */
  static async of(jwks: readonly JWK[]): Promise<JwkSet> {
    const keys = new Map<string, KeyObject>();
    for (const jwk of jwks) {
      if (typeof jwk.kid !== 'string') continue;
      if (jwk.d !== undefined) throw new Error(`JWK ${jwk.kid} holds a private key; a verification set takes public keys only`);
      keys.set(jwk.kid, (await importJWK(jwk, jwk.alg)) as KeyObject);
    }
    return new JwkSet(keys);
  }

  verificationKey(kid: string | undefined): Promise<KeyObject | undefined> {
    return Promise.resolve(kid === undefined ? undefined : this.keys.get(kid));
  }

  get size(): number {
    return this.keys.size;
  }
}
