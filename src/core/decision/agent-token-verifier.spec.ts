import { generateKeyPairSync, KeyObject } from 'node:crypto';
import { JWK, SignJWT } from 'jose';
import type { VerificationKeySource } from './decision-sources';
import { AgentTokenVerifier } from './agent-token-verifier';
import { JwkSet } from '../../sidecar/jwk-set';

const ISSUER = 'https://gateway.test';

/** A key source whose trusted set the test swaps, as a new bundle swaps the sidecar's. */
class SwappableKeys implements VerificationKeySource {
  constructor(public set: JwkSet) {}
  verificationKey(kid: string | undefined): Promise<KeyObject | undefined> {
    return this.set.verificationKey(kid);
  }
}

function keyPair(kid: string): { privateKey: KeyObject; jwk: JWK } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, jwk: { ...(publicKey.export({ format: 'jwk' }) as JWK), kid, alg: 'EdDSA' } };
}

function token(privateKey: KeyObject, kid: string, expiresInSeconds = 600, issuedInSeconds = 0): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ org: 'org_a', tier: 'verified' })
    .setProtectedHeader({ alg: 'EdDSA', kid })
    .setSubject('agent_a')
    .setIssuer(ISSUER)
    .setIssuedAt(now + issuedInSeconds)
    .setExpirationTime(now + expiresInSeconds)
    .sign(privateKey);
}

describe('AgentTokenVerifier', () => {
  const first = keyPair('key-1');
  const second = keyPair('key-2');
  let keys: SwappableKeys;
  let verifier: AgentTokenVerifier;

  beforeEach(async () => {
    keys = new SwappableKeys(await JwkSet.of([first.jwk]));
    verifier = new AgentTokenVerifier(keys, { mode: 'enforce', tokenIssuer: ISSUER });
  });

  it('accepts a token signed by a trusted key, again from its cache', async () => {
    const signed = await token(first.privateKey, 'key-1');
    expect((await verifier.verify(signed, Date.now())).sub).toBe('agent_a');
    expect((await verifier.verify(signed, Date.now())).sub).toBe('agent_a');
  });

  it('refuses a token verified earlier once its key is no longer trusted', async () => {
    const signed = await token(first.privateKey, 'key-1');
    await verifier.verify(signed, Date.now());
    keys.set = await JwkSet.of([second.jwk]);
    await expect(verifier.verify(signed, Date.now())).rejects.toThrow('invalid token');
  });

  it('keeps accepting a token when the same key arrives again in a new set', async () => {
    const signed = await token(first.privateKey, 'key-1');
    await verifier.verify(signed, Date.now());
    keys.set = await JwkSet.of([first.jwk, second.jwk]);
    expect((await verifier.verify(signed, Date.now())).sub).toBe('agent_a');
  });

  it('refuses a token whose kid now names a different key', async () => {
    const signed = await token(first.privateKey, 'key-1');
    await verifier.verify(signed, Date.now());
    keys.set = await JwkSet.of([{ ...second.jwk, kid: 'key-1' }]);
    await expect(verifier.verify(signed, Date.now())).rejects.toThrow('invalid token');
  });

  it('refuses a cached token once it has expired', async () => {
    const signed = await token(first.privateKey, 'key-1', 60);
    await verifier.verify(signed, Date.now());
    await expect(verifier.verify(signed, Date.now() + 61_000)).rejects.toThrow('token expired');
  });

  it('refuses a token issued more than the clock skew in the future, naming the problem', async () => {
    const signed = await token(first.privateKey, 'key-1', 7200, 3600);
    await expect(verifier.verify(signed, Date.now())).rejects.toThrow(/^Token is issued in the future \(iat \d+, more than 60 s ahead/);
  });

  it('accepts a token issued within the clock skew in the future', async () => {
    const signed = await token(first.privateKey, 'key-1', 600, 30);
    expect((await verifier.verify(signed, Date.now())).sub).toBe('agent_a');
  });
});
