import { OnApplicationShutdown } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import Redis from 'ioredis';
import { REDIS_COMMAND_TIMEOUT_MS } from '../common/redis-command-timeout';
import { redisCountersUnavailable } from '../common/redis-counters';

/**
 * One fixed window per key, counted atomically by the Redis server (and timed by its clock), so
 * every gateway instance counts against the same window. Returns hits, the window's remaining
 * milliseconds and whether the hit is over the limit.
 */
const FIXED_WINDOW = `
local hits = redis.call('INCR', KEYS[1])
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  left = tonumber(ARGV[1])
end
return {hits, left}
`;

const KEY_PREFIX = 'agentgov:throttle:';

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/**
 * @nestjs/throttler storage in Redis (REDIS_URL): the billing rate limit is shared by all
 * gateway instances. A client over the limit stays blocked until its window ends.
 */
export class RedisThrottlerStorage implements ThrottlerStorage, OnApplicationShutdown {
  private readonly redis: Redis;

  constructor(url: string) {
    this.redis = new Redis(url, { maxRetriesPerRequest: 2, lazyConnect: true, commandTimeout: REDIS_COMMAND_TIMEOUT_MS });
    this.redis.defineCommand('agentgovFixedWindow', { numberOfKeys: 1, lua: FIXED_WINDOW });
  }

  async increment(key: string, ttl: number, limit: number): Promise<ThrottlerStorageRecord> {
    const command = (this.redis as unknown as Record<string, (...args: unknown[]) => Promise<[number, number]>>).agentgovFixedWindow;
    const [hits, leftMs] = await command.call(this.redis, KEY_PREFIX + key, ttl).catch(() => {
      throw redisCountersUnavailable();
    });
    const secondsLeft = Math.max(1, Math.ceil(Number(leftMs) / 1000));
    const isBlocked = Number(hits) > limit;
    return { totalHits: Number(hits), timeToExpire: secondsLeft, isBlocked, timeToBlockExpire: isBlocked ? secondsLeft : 0 };
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.redis.status === 'wait' || this.redis.status === 'end') return;
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
