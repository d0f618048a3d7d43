import Redis from 'ioredis';
import { REDIS_COMMAND_TIMEOUT_MS } from '../common/redis-command-timeout';

const MINUTE_MS = 60_000;

/**
 * ALERT_RATE_LIMIT's counter: alerts sent per clock minute and organization, all providers
 * together, so one organization's flood never silences another's alerts (docs/alerts.md).
 * Failures before any decision, which no organization owns, count under their own key.
 */
export interface AlertRateCounter {
  /** Counts up to `count` alerts of `orgKey` against this minute's limit; returns how many may be sent (the first ones). */
  take(orgKey: string, count: number, nowMs: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * The counter of one process (no REDIS_URL). Bound: one entry per organization that alerted in
 * the current minute; the map is emptied when the minute turns, so a `take` costs one map
 * lookup whatever the history.
 */
export class LocalAlertRateCounter implements AlertRateCounter {
  private minute = -1;
  private readonly used = new Map<string, number>();

  constructor(private readonly limit: number) {}

  async take(orgKey: string, count: number, nowMs: number): Promise<number> {
    return this.takeNow(orgKey, count, nowMs);
  }

  takeNow(orgKey: string, count: number, nowMs: number): number {
    const minute = Math.floor(nowMs / MINUTE_MS);
    if (minute !== this.minute) {
      this.minute = minute;
      this.used.clear();
    }
    const used = this.used.get(orgKey) ?? 0;
    const allowed = Math.max(0, Math.min(count, this.limit - used));
    this.used.set(orgKey, used + allowed);
    return allowed;
  }

  async close(): Promise<void> {}
}

/**
 * The counter shared by every gateway instance through Redis (REDIS_URL): one INCRBY per batch
 * of an organization's alerts on a key per clock minute, organization and environment
 * (ALERT_ENVIRONMENT), so staging and production sharing a Redis keep their own limits. While Redis cannot be reached, or does not
 * answer within REDIS_COMMAND_TIMEOUT_MS, each process counts alone rather than dropping or flooding.
 */
export class RedisAlertRateCounter implements AlertRateCounter {
  private readonly redis: Redis;
  private readonly fallback: LocalAlertRateCounter;
  /** Counting alone since Redis failed: said once per outage, not per batch (a batch every 10 ms under a flood). */
  private alone = false;

  constructor(
    url: string,
    private readonly limit: number,
    private readonly environment: string,
    private readonly onError: (message: string) => void,
  ) {
    this.redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: true, lazyConnect: false, commandTimeout: REDIS_COMMAND_TIMEOUT_MS });
    // ioredis reports each failed reconnect: the line must say whose connection it is (the gateway has several).
    this.redis.on('error', (error: Error) => onError(`alert rate counter: Redis connection error: ${error.message}`));
    this.fallback = new LocalAlertRateCounter(limit);
  }

  async take(orgKey: string, count: number, nowMs: number): Promise<number> {
    const key = `agentgov:alert-rate:${this.environment}:${orgKey}:${Math.floor(nowMs / MINUTE_MS)}`;
    try {
      const results = await this.redis.multi().incrby(key, count).pexpire(key, 2 * MINUTE_MS).exec();
      const total = Number(results?.[0]?.[1]);
      if (!Number.isFinite(total)) throw new Error('unexpected INCRBY answer');
      if (this.alone) this.onError('alert rate counter in Redis again');
      this.alone = false;
      return Math.max(0, Math.min(count, this.limit - (total - count)));
    } catch (error) {
      if (!this.alone) this.onError(`alert rate counter in Redis unavailable, counting in this process until it is back: ${error instanceof Error ? error.message : String(error)}`);
      this.alone = true;
      return this.fallback.takeNow(orgKey, count, nowMs);
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
