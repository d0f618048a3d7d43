import { randomFillSync } from 'node:crypto';

// Random bytes are drawn in 4 KiB blocks: one getrandom call per ~256 ids instead of one per id,
// which matters on the proxy path (a trace id and an audit id per request).
const pool = Buffer.alloc(4096);
let offset = pool.length;

/** `bytes` random bytes as lowercase hex, from the CSPRNG. */
export function randomHex(bytes: number): string {
  if (offset + bytes > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + bytes);
  offset += bytes;
  return hex;
}
