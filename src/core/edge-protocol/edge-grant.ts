import { createCipheriv, createDecipheriv, createHash, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, KeyObject, randomBytes, sign } from 'node:crypto';
import type { JWK } from 'jose';
import { canonicalJson } from '../common/canonical-json';
import { SIDECAR_KEY_TYPE } from '../decision/decision-token';
import type { CredentialPlacement, CredentialRoute } from '../decision/upstream-credentials';

/*
 * A sidecar's grant (docs/security.md "Sidecars"): what the gateway gives one sidecar, apart from
 * the organization's bundle, in answer to `POST /api/v1/sidecar/grant` with the sidecar's two
 * public keys:
 *
 * - a certificate of its Ed25519 signing key (a JWT of the gateway's key, `typ: sidecar-key+jwt`,
 *   `{iss, sub: sidecar id, org, iat, exp, cnf: {jwk}}`), which its decision tokens carry in their
 *   `sck` header, so upstream verifiers accept them from the gateway's JWKS alone;
 * - the organization's credentials marked for the edge, each value sealed to its X25519 sealing
 *   key: an ephemeral X25519 key agreement, HKDF-SHA256, AES-256-GCM with the credential's id,
 *   version, organization and the sidecar's id as associated data. Only that sidecar's private key
 *   opens it: the grant crosses the network, and the sidecar's cache, sealed.
 */

/** How long a certificate vouches for a sidecar's key: how long a sidecar cut off from its gateway keeps issuing tokens upstreams accept. */
export const SIDECAR_CERTIFICATE_TTL_SECONDS = 24 * 3600;

/** A sidecar's public keys, as it presents them. */
export interface SidecarPublicKeys {
  /** Ed25519 (OKP) key its decision tokens are signed with. */
  signingKey: JWK;
  /** X25519 (OKP) key its edge credentials are sealed to. */
  sealingKey: JWK;
}

/** One edge credential, its value sealed to the sidecar. */
export interface SealedEdgeCredential {
  id: string;
  version: number;
  route: CredentialRoute;
  placement: CredentialPlacement;
  /** base64url of ephemeral public key (32) ‖ iv (12) ‖ tag (16) ‖ ciphertext. */
  sealed: string;
}

export interface EdgeGrant {
  sidecarId: string;
  orgId: string;
  certificate: string;
  /** When the certificate expires (ISO 8601). */
  expiresAt: string;
  credentials: SealedEdgeCredential[];
}

/** What a credential's sealed value is bound to: it opens only for this credential version, organization and sidecar. */
export function sealedFor(credentialId: string, version: number, orgId: string, sidecarId: string): string {
  return `${credentialId}\n${version}\n${orgId}\n${sidecarId}`;
}

const EPHEMERAL_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HKDF_INFO = Buffer.from('agentgov edge credential v1');

/** Seals `value` to an X25519 public key. */
export function sealToSidecar(sealingKey: KeyObject, value: string, bound: string): string {
  const ephemeral = generateKeyPairSync('x25519');
  const ephemeralRaw = rawPublic(ephemeral.publicKey);
  const key = derivedKey(diffieHellman({ privateKey: ephemeral.privateKey, publicKey: sealingKey }), ephemeralRaw);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(bound));
  const encrypted = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return Buffer.concat([ephemeralRaw, iv, cipher.getAuthTag(), encrypted]).toString('base64url');
}

/** The value, or undefined when `sealed` was not sealed to this key for `bound`. */
export function openSealed(sealingPrivateKey: KeyObject, sealed: string, bound: string): string | undefined {
  const bytes = Buffer.from(sealed, 'base64url');
  if (bytes.length < EPHEMERAL_BYTES + IV_BYTES + TAG_BYTES) return undefined;
  try {
    const ephemeralRaw = bytes.subarray(0, EPHEMERAL_BYTES);
    const ephemeral = createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: ephemeralRaw.toString('base64url') }, format: 'jwk' });
    const key = derivedKey(diffieHellman({ privateKey: sealingPrivateKey, publicKey: ephemeral }), ephemeralRaw);
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(EPHEMERAL_BYTES, EPHEMERAL_BYTES + IV_BYTES));
    decipher.setAAD(Buffer.from(bound));
    decipher.setAuthTag(bytes.subarray(EPHEMERAL_BYTES + IV_BYTES, EPHEMERAL_BYTES + IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(EPHEMERAL_BYTES + IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

/** The certificate of a sidecar's signing key, signed by the gateway's key. */
export function certifySidecarKey(
  gatewayKey: { privateKey: KeyObject; kid: string; alg: 'EdDSA' | 'ES256' },
  fields: { issuer: string; sidecarId: string; orgId: string; signingKey: JWK },
  nowMs = Date.now(),
): { certificate: string; expiresAt: Date } {
  const iat = Math.floor(nowMs / 1000);
  const exp = iat + SIDECAR_CERTIFICATE_TTL_SECONDS;
  const header = { alg: gatewayKey.alg, kid: gatewayKey.kid, typ: SIDECAR_KEY_TYPE };
  const { kty, crv, x } = fields.signingKey;
  const payload = { iss: fields.issuer, sub: fields.sidecarId, org: fields.orgId, iat, exp, cnf: { jwk: { kty, crv, x } } };
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  const signature =
    gatewayKey.alg === 'EdDSA' ? sign(null, Buffer.from(input), gatewayKey.privateKey) : sign('sha256', Buffer.from(input), { key: gatewayKey.privateKey, dsaEncoding: 'ieee-p1363' });
  return { certificate: `${input}.${signature.toString('base64url')}`, expiresAt: new Date(exp * 1000) };
}

/** A stable name of a sidecar's two public keys (SHA-256 of their canonical JSON): what a sidecar token is bound to. */
export function sidecarKeysThumbprint(keys: SidecarPublicKeys): string {
  const { kty: sk, crv: sc, x: sx } = keys.signingKey;
  const { kty: ek, crv: ec, x: ex } = keys.sealingKey;
  return createHash('sha256').update(canonicalJson({ signing: { kty: sk, crv: sc, x: sx }, sealing: { kty: ek, crv: ec, x: ex } })).digest('base64url');
}

/** The public key of an OKP JWK of curve `crv`, or a sentence saying what is wrong with it. */
export function okpPublicKey(jwk: unknown, crv: 'Ed25519' | 'X25519', what: string): KeyObject | string {
  const candidate = jwk as { kty?: unknown; crv?: unknown; x?: unknown; d?: unknown } | null;
  if (typeof candidate !== 'object' || candidate === null) return `${what}: not a JWK object`;
  if (candidate.d !== undefined) return `${what}: a private key; send the public half only`;
  if (candidate.kty !== 'OKP' || candidate.crv !== crv || typeof candidate.x !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(candidate.x)) return `${what}: not an ${crv} public key (kty OKP, crv ${crv}, x)`;
  try {
    return createPublicKey({ key: { kty: 'OKP', crv, x: candidate.x }, format: 'jwk' });
  } catch {
    return `${what}: not an ${crv} public key`;
  }
}

function rawPublic(key: KeyObject): Buffer {
  return Buffer.from(key.export({ format: 'jwk' }).x!, 'base64url');
}

function derivedKey(shared: Buffer, ephemeralRaw: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', shared, ephemeralRaw, HKDF_INFO, 32));
}
