import Redis from 'ioredis';
import type { BudgetAnswer, BudgetHold, BudgetLeaseAnswer, BudgetLeasing, BudgetLedger } from '../../core/policy-engine/types';

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
-- Keys only ever live longer: a lease's reservation is dated ahead, and a later call must not cut it short.
local function keep(ms)
  for _, key in ipairs({zkey, hkey, tkey}) do
    if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, ms) end
  end
end
local function wait_for(window)
  redis.call('SET', tkey, tostring(total), 'KEEPTTL')
  keep(window)
  local oldest = redis.call('ZRANGE', zkey, 0, 0, 'WITHSCORES')
  if oldest[2] == nil then return {'wait', tostring(window)} end
  return {'wait', tostring(math.max(1, tonumber(oldest[2]) + window - now))}
end
`;

const RESERVE = `${EXPIRE}
local cost, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
if total + cost > limit + 1e-9 then return wait_for(window) end
if ARGV[4] ~= '1' then return {'fits', ''} end
local id = time[1] .. time[2] .. ':' .. ARGV[5]
redis.call('ZADD', zkey, now, id)
redis.call('HSET', hkey, id, tostring(cost))
redis.call('SET', tkey, tostring(total + cost), 'KEEPTTL')
keep(window)
return {'held', id}
`;

/* A lease (BudgetLeasing): up to ARGV[4], at least ARGV[1], dated ARGV[5] ms ahead, its id prefixed by its owner ARGV[6]. */
const LEASE = `${EXPIRE}
local least, limit, want, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4]), tonumber(ARGV[5])
if total + least > limit + 1e-9 then return wait_for(window) end
local granted = math.max(least, math.min(want, limit - total))
local id = ARGV[6] .. '/' .. time[1] .. time[2] .. ':' .. ARGV[7]
redis.call('ZADD', zkey, now + lease, id)
redis.call('HSET', hkey, id, tostring(granted))
redis.call('SET', tkey, tostring(total + granted), 'KEEPTTL')
keep(lease + window)
return {'held', id, tostring(granted)}
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
export class RedisBudgetLedger implements BudgetLedger, BudgetLeasing {
  private sequence = 0;

  constructor(private readonly redis: Redis) {
    redis.defineCommand('agentgovBudgetReserve', { numberOfKeys: 3, lua: RESERVE });
    redis.defineCommand('agentgovBudgetSettle', { numberOfKeys: 3, lua: SETTLE });
    redis.defineCommand('agentgovBudgetLease', { numberOfKeys: 3, lua: LEASE });
  }

  async lease(key: string, owner: string, least: number, want: number, limit: number, windowMs: number, leaseMs: number): Promise<BudgetLeaseAnswer> {
    const args = [String(least), String(limit), String(windowMs), String(want), String(leaseMs), owner, String(++this.sequence % 1e9)];
    const [kind, value, granted] = (await this.script('agentgovBudgetLease').call(this.redis, ...keysOf(key), ...args)) as [string, string, string?];
    if (kind === 'wait') return { retryAfterMs: Number(value) };
    return { id: value, granted: Number(granted) };
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
