import fs from 'node:fs';
import path from 'node:path';
import { KeyObject, createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { calculateJwkThumbprint, JWK } from 'jose';

export type SigningAlgorithm = 'EdDSA' | 'ES256';

/** The instance's private signing key and what verifiers need to know of it. */
export interface SigningKeyMaterial {
  privateKey: KeyObject;
  publicKey: KeyObject;
  publicJwk: JWK;
  kid: string;
  alg: SigningAlgorithm;
}

/**
 * Loads the PEM private key at `file`, or generates an Ed25519 key there (mode 0600) when the
 * file does not exist. Ed25519 (EdDSA) and P-256 (ES256) keys are accepted.
 */
export async function loadOrCreateSigningKey(file: string): Promise<SigningKeyMaterial> {
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const { privateKey } = generateKeyPairSync('ed25519');
    fs.writeFileSync(file, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600, flag: 'wx' });
  }
  const privateKey = parsePrivateKey(fs.readFileSync(file, 'utf8'), file);
  const alg = algorithmOf(privateKey, file);
  const publicKey = createPublicKey(privateKey);
  const exported = publicKey.export({ format: 'jwk' }) as JWK;
  const kid = await calculateJwkThumbprint(exported);
  return { privateKey, publicKey, kid, alg, publicJwk: { ...exported, kid, alg, use: 'sig' } };
}

function parsePrivateKey(pem: string, file: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch {
    throw new Error(`SIGNING_KEY_FILE ${file}: not a PEM private key`);
  }
}

function algorithmOf(key: KeyObject, file: string): SigningAlgorithm {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  throw new Error(`SIGNING_KEY_FILE ${file}: expected an Ed25519 or P-256 private key, got ${key.asymmetricKeyType}`);
}
