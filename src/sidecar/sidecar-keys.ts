import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { JWK } from 'jose';
import type { SidecarPublicKeys } from '../core/edge-protocol/edge-grant';
import { readFileIfExists, writeFileAtomic } from './atomic-file';

const KEYS_FILE = 'sidecar-keys.json';

/** The sidecar's own keys: Ed25519 signs its decision tokens, X25519 opens the edge credentials sealed to it. */
export interface SidecarKeys {
  signing: KeyObject;
  sealing: KeyObject;
  /** Its decision tokens' `kid`: the RFC 7638 thumbprint of the signing key. */
  kid: string;
  publicKeys: SidecarPublicKeys;
}

/**
 * This sidecar's keys, made at its first start and kept in CACHE_DIR/sidecar-keys.json (mode
 * 0600; docs/sidecar.md). The gateway binds the sidecar token to them at the first grant: a
 * cleared CACHE_DIR makes new keys, which need a new sidecar token. A damaged file stops the start.
 */
export function sidecarKeys(cacheDir: string): SidecarKeys {
  fs.mkdirSync(cacheDir, { recursive: true });
  const file = path.join(cacheDir, KEYS_FILE);
  const kept = readFileIfExists(file);
  if (kept === undefined) {
    const made = { signing: pem(generateKeyPairSync('ed25519').privateKey), sealing: pem(generateKeyPairSync('x25519').privateKey) };
    writeFileAtomic(file, JSON.stringify(made), 0o600);
    return keysOf(made, file);
  }
  let parsed: { signing?: unknown; sealing?: unknown };
  try {
    parsed = JSON.parse(kept) as { signing?: unknown; sealing?: unknown };
  } catch {
    throw new Error(`${file} is not JSON: restore it, or delete it (the sidecar then needs a new sidecar token)`);
  }
  return keysOf(parsed, file);
}

function keysOf(stored: { signing?: unknown; sealing?: unknown }, file: string): SidecarKeys {
  const signing = privateKey(stored.signing, 'ed25519', file);
  const sealing = privateKey(stored.sealing, 'x25519', file);
  const signingJwk = publicJwk(signing);
  return { signing, sealing, kid: thumbprint(signingJwk), publicKeys: { signingKey: signingJwk, sealingKey: publicJwk(sealing) } };
}

function privateKey(text: unknown, type: 'ed25519' | 'x25519', file: string): KeyObject {
  try {
    const key = createPrivateKey(String(text));
    if (key.asymmetricKeyType === type) return key;
  } catch {
    // Reported below.
  }
  throw new Error(`${file} holds no ${type} private key: restore it, or delete it (the sidecar then needs a new sidecar token)`);
}

function pem(key: KeyObject): string {
  return key.export({ format: 'pem', type: 'pkcs8' }).toString();
}

function publicJwk(key: KeyObject): JWK {
  const { kty, crv, x } = createPublicKey(key).export({ format: 'jwk' });
  return { kty: kty!, crv, x };
}

function thumbprint(jwk: JWK): string {
  return createHash('sha256').update(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x })).digest('base64url');
}
