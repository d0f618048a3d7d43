import { hash } from 'node:crypto';

/**
 * SHA-256 of an admin token or API key. Tokens carry 256 random bits, so a fast hash is enough at
 * rest, and looking tokens up by their hash means the secret is never compared byte by byte:
 * timing can reveal nothing about a stored token. The one-shot `crypto.hash` (no Hash object)
 * because an adapter's key is hashed on every call it makes.
 */
export function hashAdminToken(token: string): string {
  return hash('sha256', token, 'hex');
}
