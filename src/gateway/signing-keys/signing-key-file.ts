import fs from 'node:fs';
import path from 'node:path';
import { KeyObject, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
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
  if (!fs.existsSync(file)) createKeyFile(file);
  const privateKey = parsePrivateKey(fs.readFileSync(file, 'utf8'), file);
  const alg = algorithmOf(privateKey, file);
  const publicKey = createPublicKey(privateKey);
  const exported = publicKey.export({ format: 'jwk' }) as JWK;
  const kid = await calculateJwkThumbprint(exported);
  return { privateKey, publicKey, kid, alg, publicJwk: { ...exported, kid, alg, use: 'sig' } };
}

/**
 * Instances may share one SIGNING_KEY_FILE (docs/production.md), and replicas start together:
 * the key is written whole to a name of this process's own, then hard-linked into place, which
 * fails if the file exists by then. So the file is never seen half-written, and of instances
 * that found it missing at once, one key wins and every one of them reads that one.
 */
function createKeyFile(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const { privateKey } = generateKeyPairSync('ed25519');
  const draft = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  fs.writeFileSync(draft, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600, flag: 'wx' });
  try {
    fs.linkSync(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    fs.rmSync(draft, { force: true });
  }
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
