import { LRUCache } from 'lru-cache';
import type { RateLimiter } from './types';

/** Options of the in-process limiter. */
export interface SlidingWindowLimiterOptions {
  /** Most keys kept; the least recently used beyond this are evicted. Default 100 000. */
  readonly maxKeys?: number;
}

const INITIAL_CAPACITY = 8;

/**
 * The last `limit` hit times of one key, oldest at `head`. The buffer grows on demand up to
 * `limit`, so a large limit costs memory only for keys that are actually busy.
 */
class HitLog {
  stamps: Float64Array;
  head = 0;
  count = 0;
  windowMs: number;

  constructor(
    readonly limit: number,
    windowMs: number,
  ) {
    this.stamps = new Float64Array(Math.min(limit, INITIAL_CAPACITY));
    this.windowMs = windowMs;
  }

  /** Oldest of the last `limit` hits, or undefined while fewer than `limit` were recorded. */
  oldestOfFull(): number | undefined {
    return this.count < this.limit ? undefined : this.stamps[this.head];
  }

  newest(): number {
    return this.count === 0 ? -Infinity : this.stamps[(this.head + this.count - 1) % this.stamps.length];
  }

  record(nowMs: number): void {
    if (this.count < this.limit) {
      if (this.count === this.stamps.length) this.dropExpired(nowMs);
      if (this.count === this.stamps.length) this.grow();
      this.stamps[(this.head + this.count) % this.stamps.length] = nowMs;
      this.count++;
      return;
    }
    this.stamps[this.head] = nowMs;
    this.head = (this.head + 1) % this.stamps.length;
  }

  // Hits that left the window can never count again; dropping them bounds memory by the hits in the window.
  private dropExpired(nowMs: number): void {
    while (this.count > 0 && nowMs - this.stamps[this.head] >= this.windowMs) {
      this.head = (this.head + 1) % this.stamps.length;
      this.count--;
    }
  }

  private grow(): void {
    const grown = new Float64Array(Math.min(this.limit, this.stamps.length * 2));
    for (let i = 0; i < this.count; i++) grown[i] = this.stamps[(this.head + i) % this.stamps.length];
    this.stamps = grown;
    this.head = 0;
  }
}

/**
 * In-process `RateLimiter`: an exact sliding log per key (limited while the oldest of the last
 * `limit` hits is still inside the window), with least-recently-used eviction beyond `maxKeys`
 * in constant time per hit whatever the history (docs/performance.md).
 */
export class SlidingWindowLimiter implements RateLimiter {
  readonly maxKeys: number;
  private readonly logs: LRUCache<string, HitLog>;

  constructor(options: SlidingWindowLimiterOptions = {}) {
    this.maxKeys = options.maxKeys ?? 100_000;
    if (!(this.maxKeys >= 1)) throw new Error('maxKeys must be at least 1');
    this.logs = new LRUCache({ max: this.maxKeys });
  }

  /** Number of keys currently tracked. */
  get size(): number {
    return this.logs.size;
  }

  /** Records a hit unless the window is full; 0 when recorded, else ms until a slot frees. */
  hit(key: string, limit: number, windowMs: number, nowMs: number): number {
    if (limit < 1) return windowMs;
    const log = this.touch(key, limit, windowMs);
    const wait = waitFor(log, windowMs, nowMs);
    if (wait === 0) log.record(nowMs);
    return wait;
  }

  /** What hit would answer, recording nothing. */
  peek(key: string, limit: number, windowMs: number, nowMs: number): number {
    if (limit < 1) return windowMs;
    const log = this.logs.peek(key);
    if (log === undefined || log.limit !== limit) return 0;
    return waitFor(log, windowMs, nowMs);
  }

  /** Drops keys with no hit inside their window; returns how many were dropped. */
  sweep(nowMs: number): number {
    const idle: string[] = [];
    for (const [key, log] of this.logs.entries()) if (log.newest() <= nowMs - log.windowMs) idle.push(key);
    for (const key of idle) this.logs.delete(key);
    return idle.length;
  }

  private touch(key: string, limit: number, windowMs: number): HitLog {
    let log = this.logs.get(key);
    // A changed limit (policy edited) starts a fresh log: the old ring has the wrong size.
    if (log === undefined || log.limit !== limit) {
      log = new HitLog(limit, windowMs);
      this.logs.set(key, log);
    }
    log.windowMs = windowMs;
    return log;
  }
}

function waitFor(log: HitLog, windowMs: number, nowMs: number): number {
  const oldest = log.oldestOfFull();
  if (oldest === undefined || nowMs - oldest >= windowMs) return 0;
  return oldest + windowMs - nowMs;
}
