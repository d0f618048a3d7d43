import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { Logger } from 'pino';
import { AppConfig } from '../config/app-config';
import { LOGGER } from '../logging/logging.module';
import { SlidingWindowLimiter } from '../policy-engine/sliding-window-limiter';
import type { RateLimiter } from '../policy-engine/types';
import { RedisRateLimiter } from './redis-rate-limiter';

const SWEEP_INTERVAL_MS = 60_000;

/**
 * The gateway's counters behind `rate_limit(...)`: in Redis when REDIS_URL is set, so every
 * instance counts against the same window, else in this process.
 */
@Injectable()
export class GatewayRateLimiter implements RateLimiter, OnApplicationShutdown {
  private readonly limiter: RateLimiter;
  private readonly redis?: Redis;
  private readonly sweeper?: NodeJS.Timeout;

  constructor(config: AppConfig, @Inject(LOGGER) logger: Logger) {
    if (config.redis.url) {
      this.redis = new Redis(config.redis.url, { maxRetriesPerRequest: 2, enableOfflineQueue: true });
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
    return this.limiter.hit(key, limit, windowMs, nowMs);
  }

  peek(key: string, limit: number, windowMs: number, nowMs: number): number | Promise<number> {
    return this.limiter.peek(key, limit, windowMs, nowMs);
  }

  onApplicationShutdown(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.redis?.disconnect();
  }
}
