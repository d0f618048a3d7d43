import { generateKeyPairSync } from 'node:crypto';
import type { JWK } from 'jose';
import { canonicalJson } from '../common/canonical-json';
import { BUNDLE_FORMAT, BundleContent, bundleSignatureProblem, contentTag, isNewerVersion, publicKeyOf, signBundle } from './bundle-format';

function content(overrides: Partial<BundleContent> = {}): BundleContent {
  return {
    format: BUNDLE_FORMAT,
    orgId: 'org_a',
    version: '2026-11-24T08:00:00.000Z',
    policyVersion: 3,
    policies: [{ name: 'p', rules: [{ condition: 'agent.trust_tier < trusted', action: 'deny', reason: 'no' }] }],
    tiers: { order: ['unverified', 'verified'], aliases: { standard: 'verified' } },
    agents: [{ id: 'agent_1', name: 'one', trustTier: 'verified', tags: ['x'], revoked: false }],
    revoked: [],
    keys: [],
    tokenIssuer: 'http://gateway.test',
    gatewayMode: 'enforce',
    ...overrides,
  };
}

describe('bundle canonical form and signature', () => {
  it('serialises with sorted keys at every depth, without whitespace, arrays in order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: true, y: null }], c: 'é"' } })).toBe('{"a":{"c":"é\\"","d":[3,{"y":null,"z":true}]},"b":1}');
    expect(canonicalJson({ a: undefined, b: [undefined] })).toBe('{"b":[null]}');
  });

  it('gives equal content an equal tag whatever the key order, and different content another', () => {
    const a = content();
    const reordered = Object.fromEntries(Object.entries(a).reverse()) as unknown as BundleContent;
    expect(contentTag(reordered)).toBe(contentTag(a));
    expect(contentTag(content({ revoked: ['agent_1'] }))).not.toBe(contentTag(a));
  });

  it.each([
    ['Ed25519', 'EdDSA', () => generateKeyPairSync('ed25519')],
    ['P-256', 'ES256', () => generateKeyPairSync('ec', { namedCurve: 'prime256v1' })],
  ] as const)('signs with %s and verifies against the public key, as a JWK too', (_name, alg, generate) => {
    const { privateKey, publicKey } = generate();
    const signed = signBundle(content(), { privateKey, kid: 'k1', alg });
    expect(signed.signature).toMatchObject({ alg, kid: 'k1' });
    expect(bundleSignatureProblem(signed, publicKey)).toBeNull();
    expect(bundleSignatureProblem(JSON.parse(JSON.stringify(signed)), publicKeyOf(publicKey.export({ format: 'jwk' }) as JWK))).toBeNull();
  });

  it('refuses a tampered, an unsigned, a foreign-signed and a malformed bundle, saying why', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const signed = signBundle(content(), { privateKey, kid: 'k1', alg: 'EdDSA' });
    const tampered = { ...signed, agents: [{ ...signed.agents[0], trustTier: 'privileged' }] };
    expect(bundleSignatureProblem(tampered, publicKey)).toMatch(/does not verify/);
    const { signature: _signature, ...unsigned } = signed;
    expect(bundleSignatureProblem(unsigned, publicKey)).toBe('unsigned');
    const other = generateKeyPairSync('ed25519');
    expect(bundleSignatureProblem(signBundle(content(), { privateKey: other.privateKey, kid: 'k1', alg: 'EdDSA' }), publicKey)).toMatch(/does not verify/);
    expect(bundleSignatureProblem({ ...signed, version: 'yesterday' }, publicKey)).toBe('version is not a timestamp');
    expect(bundleSignatureProblem('nope', publicKey)).toBe('not a JSON object');
  });

  it('orders versions as times', () => {
    expect(isNewerVersion('2026-11-24T08:00:00.001Z', '2026-11-24T08:00:00.000Z')).toBe(true);
    expect(isNewerVersion('2026-11-24T08:00:00.000Z', '2026-11-24T08:00:00.000Z')).toBe(false);
    expect(isNewerVersion('2026-11-23T08:00:00.000Z', '2026-11-24T08:00:00.000Z')).toBe(false);
    expect(isNewerVersion('2026-11-23T08:00:00.000Z', null)).toBe(true);
  });
});
