import { createHash, hash } from 'node:crypto';

/** SHA-256's block size: HMAC pads its key to it (RFC 2104). */
const BLOCK = 64;
const DIGEST = 32;

/**
 * HMAC-SHA256 (RFC 2104) with one key, as lowercase hex, from two one-shot `crypto.hash` calls
 * over buffers prepared once: the padded key blocks, and room for the message behind the inner
 * one. The webhook signs every alert twice, and `createHmac` builds an OpenSSL context and a
 * stream object per signature: about 1.9 µs per signature of an alert body against 1.15 µs here
 * (bench/alerts.bench.ts runs an alert per denied request). hmac-sha256.spec.ts checks it
 * against `createHmac`.
 */
export class HmacSha256 {
  /** The inner key block, then the message being signed. */
  private inner: Buffer;
  /** The outer key block, then the inner digest. */
  private readonly outer = Buffer.alloc(BLOCK + DIGEST);

  constructor(key: Buffer, messageRoom = 4096) {
    const block = Buffer.alloc(BLOCK);
    (key.length > BLOCK ? createHash('sha256').update(key).digest() : key).copy(block);
    this.inner = Buffer.allocUnsafeSlow(BLOCK + messageRoom);
    for (let at = 0; at < BLOCK; at++) {
      this.inner[at] = block[at] ^ 0x36;
      this.outer[at] = block[at] ^ 0x5c;
    }
  }

  /** The HMAC of `prefix` (ASCII) followed by `message`, as lowercase hex. */
  hex(message: Buffer, prefix = ''): string {
    const length = BLOCK + prefix.length + message.length;
    if (length > this.inner.length) this.grow(length);
    const inner = this.inner;
    if (prefix !== '') inner.write(prefix, BLOCK, 'latin1');
    message.copy(inner, BLOCK + prefix.length);
    // 'binary' (latin1): a string of the digest's bytes, cheaper to get than a Buffer.
    this.outer.write(hash('sha256', inner.subarray(0, length), 'binary'), BLOCK, 'latin1');
    return hash('sha256', this.outer, 'hex');
  }

  private grow(length: number): void {
    const inner = Buffer.allocUnsafeSlow(Math.max(length, this.inner.length * 2));
    this.inner.copy(inner, 0, 0, BLOCK);
    this.inner = inner;
  }
}
