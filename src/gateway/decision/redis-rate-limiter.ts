import Redis from 'ioredis';
import type { RateLimiter } from '../../core/policy-engine/types';

/**
 * Exact sliding log in a Redis sorted set, atomically in one script, timed by the Redis
 * server's clock so every gateway instance counts against the same window.
 * Returns 0 when the hit is recorded, else milliseconds until a slot frees.
 */
const SLIDING_LOG = `
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local record = ARGV[3] == '1'
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
if count >= limit then
  local oldest = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
  return math.max(1, tonumber(oldest[2]) + window - now)
end
if record then
  redis.call('ZADD', key, now, time[1] .. time[2] .. ':' .. ARGV[4])
  redis.call('PEXPIRE', key, window)
end
return 0
`;

const KEY_PREFIX = 'agentgov:rl:';

/** Rate-limit counters shared by all gateway instances (REDIS_URL). */
export class RedisRateLimiter implements RateLimiter {
  private sequence = 0;

  constructor(private readonly redis: Redis) {
    redis.defineCommand('agentgovSlidingLog', { numberOfKeys: 1, lua: SLIDING_LOG });
  }

  /** Records a hit unless the window is full; 0 when recorded, else ms until a slot frees. */
  hit(key: string, limit: number, windowMs: number): Promise<number> {
    return this.run(key, limit, windowMs, true);
  }

  /** What hit would answer, recording nothing. */
  peek(key: string, limit: number, windowMs: number): Promise<number> {
    return this.run(key, limit, windowMs, false);
  }

  private async run(key: string, limit: number, windowMs: number, record: boolean): Promise<number> {
    const command = (this.redis as unknown as Record<string, (...args: unknown[]) => Promise<number>>).agentgovSlidingLog;
    // The member only needs to be unique within one Redis microsecond.
    const result = await command.call(this.redis, KEY_PREFIX + key, limit, windowMs, record ? '1' : '0', String(++this.sequence % 1e9));
    return Number(result);
  }
}
