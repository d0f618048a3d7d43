import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * A configured bearer token (METRICS_TOKEN), compared in constant time through its SHA-256, so
 * neither its length nor its bytes show in how long a refusal takes.
 */
export class BearerToken {
  private readonly digest: Buffer | null;

  constructor(token: string | undefined) {
    this.digest = token === undefined ? null : sha256(token);
  }

  get configured(): boolean {
    return this.digest !== null;
  }

  /** True when `authorization` is `Bearer <the token>`; false without a token configured. */
  matches(authorization: string | undefined): boolean {
    if (this.digest === null) return false;
    const match = authorization === undefined ? null : /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
    return match !== null && timingSafeEqual(sha256(match[1]), this.digest);
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
