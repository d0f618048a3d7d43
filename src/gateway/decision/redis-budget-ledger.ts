import Redis from 'ioredis';
import type { BudgetAnswer, BudgetHold, BudgetLedger } from '../../core/policy-engine/types';

/*
 * A budget in Redis: a sorted set of its reservations (scored by time), a hash of their costs and
 * the running total, under one hash tag so a cluster keeps them in one slot. Each script drops
 * what left the window first (each reservation leaves once: amortised O(1)), all atomically and
 * timed by the Redis server's clock, so every gateway instance counts against the same total.
 * Numbers cross as strings: Redis turns a Lua number it returns into an integer.
 */
const EXPIRE = `
local zkey, hkey, tkey = KEYS[1], KEYS[2], KEYS[3]
local window = tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local total = tonumber(redis.call('GET', tkey) or '0')
local expired = redis.call('ZRANGEBYSCORE', zkey, '-inf', now - window)
for _, id in ipairs(expired) do
  total = total - tonumber(redis.call('HGET', hkey, id) or '0')
  redis.call('HDEL', hkey, id)
end
if #expired > 0 then redis.call('ZREMRANGEBYSCORE', zkey, '-inf', now - window) end
if redis.call('ZCARD', zkey) == 0 then total = 0 end
`;

const RESERVE = `${EXPIRE}
local cost, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
if total + cost > limit + 1e-9 then
  redis.call('SET', tkey, tostring(total), 'PX', window)
  local oldest = redis.call('ZRANGE', zkey, 0, 0, 'WITHSCORES')
  if oldest[2] == nil then return {'wait', tostring(window)} end
  return {'wait', tostring(math.max(1, tonumber(oldest[2]) + window - now))}
end
if ARGV[4] ~= '1' then return {'fits', ''} end
local id = time[1] .. time[2] .. ':' .. ARGV[5]
redis.call('ZADD', zkey, now, id)
redis.call('HSET', hkey, id, tostring(cost))
redis.call('SET', tkey, tostring(total + cost), 'PX', window)
redis.call('PEXPIRE', zkey, window)
redis.call('PEXPIRE', hkey, window)
return {'held', id}
`;

const SETTLE = `
local zkey, hkey, tkey = KEYS[1], KEYS[2], KEYS[3]
local old = redis.call('HGET', hkey, ARGV[1])
if not old then return 0 end
local total = tonumber(redis.call('GET', tkey) or '0') + tonumber(ARGV[2]) - tonumber(old)
redis.call('HSET', hkey, ARGV[1], ARGV[2])
local ttl = redis.call('PTTL', tkey)
if ttl > 0 then redis.call('SET', tkey, tostring(total), 'PX', ttl) else redis.call('SET', tkey, tostring(total)) end
return 1
`;

const KEY_PREFIX = 'agentgov:';

type Script = (...args: unknown[]) => Promise<unknown>;

/** Budgets shared by all gateway instances (REDIS_URL). */
export class RedisBudgetLedger implements BudgetLedger {
  private sequence = 0;

  constructor(private readonly redis: Redis) {
    redis.defineCommand('agentgovBudgetReserve', { numberOfKeys: 3, lua: RESERVE });
    redis.defineCommand('agentgovBudgetSettle', { numberOfKeys: 3, lua: SETTLE });
  }

  reserve(key: string, cost: number, limit: number, windowMs: number): Promise<BudgetAnswer> {
    return this.run(key, cost, limit, windowMs, true);
  }

  peek(key: string, cost: number, limit: number, windowMs: number): Promise<BudgetAnswer> {
    return this.run(key, cost, limit, windowMs, false);
  }

  async settle(hold: BudgetHold, actualCost: number): Promise<boolean> {
    const result = await this.script('agentgovBudgetSettle').call(this.redis, ...keysOf(hold.key), hold.id, String(actualCost));
    return Number(result) === 1;
  }

  private async run(key: string, cost: number, limit: number, windowMs: number, reserve: boolean): Promise<BudgetAnswer> {
    const [kind, value] = (await this.script('agentgovBudgetReserve').call(this.redis, ...keysOf(key), String(cost), String(limit), String(windowMs), reserve ? '1' : '0', String(++this.sequence % 1e9))) as [string, string];
    if (kind === 'wait') return { retryAfterMs: Number(value) };
    return { id: value };
  }

  private script(name: string): Script {
    return (this.redis as unknown as Record<string, Script>)[name];
  }
}

function keysOf(key: string): [string, string, string] {
  const tagged = `${KEY_PREFIX}{${key}}`;
  return [`${tagged}:r`, `${tagged}:c`, `${tagged}:t`];
}
