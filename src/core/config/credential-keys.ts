import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { EnvReader } from './env-reader';

/** A key of the upstream credential store and its id (stored with each row it encrypted). */
export interface CredentialKey {
  id: string;
  bytes: Buffer;
  /** The variable it came from, for messages. */
  source: string;
}

/** CREDENTIALS_KEY_FILE or CREDENTIALS_KEY, and the previous key during a rotation (docs/configuration.md). */
export interface CredentialKeys {
  current?: CredentialKey;
  previous?: CredentialKey;
}

/** Largest key file read: a key is 44 characters; a wrong path must not be read whole. */
const MAX_KEY_FILE_BYTES = 4096;

export function readCredentialKeys(read: EnvReader): CredentialKeys {
  return { current: readKey(read, 'CREDENTIALS_KEY'), previous: readKey(read, 'CREDENTIALS_PREVIOUS_KEY') };
}

/** The key of `<name>_FILE` (preferred) or `<name>`: 32 bytes as base64 (44 characters) or 64 hex digits. */
function readKey(read: EnvReader, name: string): CredentialKey | undefined {
  const file = read.optionalString(`${name}_FILE`);
  if (file !== undefined) {
    const text = readKeyFile(read, `${name}_FILE`, file);
    return text === undefined ? undefined : decoded(read, `${name}_FILE`, text);
  }
  const value = read.optionalString(name);
  return value === undefined ? undefined : decoded(read, name, value);
}

function readKeyFile(read: EnvReader, variable: string, file: string): string | undefined {
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile() || stat.size > MAX_KEY_FILE_BYTES) {
      read.errors.push(`${variable}: ${file} is not a key file (a file of 32 bytes in base64 or hex)`);
      return undefined;
    }
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    read.errors.push(`${variable}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    return undefined;
  }
}

function decoded(read: EnvReader, variable: string, text: string): CredentialKey | undefined {
  const trimmed = text.trim();
  const bytes = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : /^[A-Za-z0-9+/]{43}=$/.test(trimmed) ? Buffer.from(trimmed, 'base64') : undefined;
  if (bytes === undefined || bytes.length !== 32) {
    read.errors.push(`${variable}: expected a 32-byte key as base64 (44 characters) or 64 hex digits, e.g. from \`openssl rand -base64 32\``);
    return undefined;
  }
  return { id: credentialKeyId(bytes), bytes, source: variable };
}

/** A key's id: the first 8 bytes of a SHA-256 of it, in hex; says which key a row needs without revealing it. */
export function credentialKeyId(bytes: Buffer): string {
  return createHash('sha256').update('agentgov credential key\n').update(bytes).digest('hex').slice(0, 16);
}
