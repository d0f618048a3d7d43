import { generateKeyPairSync } from 'node:crypto';
import { openSealed, sealedFor, sealToSidecar } from './edge-grant';

describe('edge credentials sealed to a sidecar', () => {
  const sidecar = generateKeyPairSync('x25519');
  const other = generateKeyPairSync('x25519');
  const bound = sealedFor('cred_1', 2, 'org_a', 'edge-1');

  it('open with the sidecar’s private key for what they were sealed for, and nothing else', () => {
    const sealed = sealToSidecar(sidecar.publicKey, 'sk_live_value', bound);
    expect(sealed).not.toContain('sk_live_value');
    expect(openSealed(sidecar.privateKey, sealed, bound)).toBe('sk_live_value');
    expect(openSealed(other.privateKey, sealed, bound)).toBeUndefined();
    for (const elsewhere of [sealedFor('cred_1', 1, 'org_a', 'edge-1'), sealedFor('cred_1', 2, 'org_b', 'edge-1'), sealedFor('cred_1', 2, 'org_a', 'edge-2'), sealedFor('cred_2', 2, 'org_a', 'edge-1')]) {
      expect(openSealed(sidecar.privateKey, sealed, elsewhere)).toBeUndefined();
    }
  });

  it('refuses a tampered or truncated seal', () => {
    const sealed = Buffer.from(sealToSidecar(sidecar.publicKey, 'value', bound), 'base64url');
    sealed[sealed.length - 1] ^= 1;
    expect(openSealed(sidecar.privateKey, sealed.toString('base64url'), bound)).toBeUndefined();
    expect(openSealed(sidecar.privateKey, sealed.subarray(0, 40).toString('base64url'), bound)).toBeUndefined();
  });

  it('seals the same value differently every time', () => {
    expect(sealToSidecar(sidecar.publicKey, 'value', bound)).not.toBe(sealToSidecar(sidecar.publicKey, 'value', bound));
  });
});
