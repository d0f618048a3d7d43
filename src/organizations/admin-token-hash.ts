import { createHash } from 'node:crypto';

/**
 * SHA-256 of an admin token. Tokens carry 256 random bits, so a fast hash is enough at rest, and
 * looking tokens up by their hash means the secret is never compared byte by byte: timing can
 * reveal nothing about a stored token.
 */
export function hashAdminToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
