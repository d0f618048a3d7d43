import { randomBytes } from 'node:crypto';
import { randomHex } from './random-hex';

/** A new random identifier such as `agent_3f9a…` (96 random bits, hex). */
export function newId(prefix: string): string {
  return `${prefix}_${randomHex(12)}`;
}

/** A new secret token such as `adm_…` (256 random bits, base64url). */
export function newSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}
