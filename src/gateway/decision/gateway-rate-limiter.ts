import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { Logger } from 'pino';
import { REDIS_COMMAND_TIMEOUT_MS } from '../common/redis-command-timeout';
import { redisCountersUnavailable } from '../common/redis-counters';
import { AppConfig } from '../../core/config/app-config';
import { LOGGER } from '../../core/logging/logging.module';
import { SlidingWindowLimiter } from '../../core/policy-engine/sliding-window-limiter';
import type { RateLimiter } from '../../core/policy-engine/types';
import { RedisRateLimiter } from './redis-rate-limiter';

const SWEEP_INTERVAL_MS = 60_000;
/** Shortest time between two warnings of failing counts (one per request would flood the log in an outage). */
const WARN_INTERVAL_MS = 60_000;

/**
 * The gateway's counters behind `rate_limit(...)`: in Redis when REDIS_URL is set, so every
 * instance counts against the same window, else in this process.
 */
@Injectable()
export class GatewayRateLimiter implements RateLimiter, OnApplicationShutdown {
  private readonly limiter: RateLimiter;
  private readonly redis?: Redis;
  private readonly sweeper?: NodeJS.Timeout;
  private lastWarnedAt = -Infinity;

  constructor(
    config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    if (config.redis.url) {
      this.redis = new Redis(config.redis.url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, commandTimeout: REDIS_COMMAND_TIMEOUT_MS });
      this.redis.on('error', (error: Error) => logger.warn({ err: error.message }, 'redis rate-limit connection error'));
      this.limiter = new RedisRateLimiter(this.redis);
      return;
    }
    const local = new SlidingWindowLimiter();
    this.limiter = local;
    this.sweeper = setInterval(() => local.sweep(Date.now()), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }

  hit(key: string, limit: number, windowMs: number, nowMs: number): number | Promise<number> {
    return this.failingAsUnavailable(this.limiter.hit(key, limit, windowMs, nowMs));
  }

  peek(key: string, limit: number, windowMs: number, nowMs: number): number | Promise<number> {
    return this.failingAsUnavailable(this.limiter.peek(key, limit, windowMs, nowMs));
  }

  /** A count Redis could not make (unreachable, or no answer within REDIS_COMMAND_TIMEOUT_MS) fails the decision as a 503 (redisCountersUnavailable). */
  private failingAsUnavailable(count: number | Promise<number>): number | Promise<number> {
    if (typeof count === 'number') return count;
    return count.catch((error: unknown) => {
      const now = Date.now();
      if (now - this.lastWarnedAt >= WARN_INTERVAL_MS) {
        this.lastWarnedAt = now;
        this.logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'rate limit counts in Redis (REDIS_URL) are failing: decisions under rate_limit rules answer 503');
      }
      throw redisCountersUnavailable();
    });
  }

  onApplicationShutdown(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.redis?.disconnect();
  }
}
