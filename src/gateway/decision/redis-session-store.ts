import Redis from 'ioredis';
import type { SessionKey, SessionStoreOptions } from '../../core/decision/session-store';
import type { LabelGrant, SessionFacts } from '../../core/policy-engine/types';

/*
 * Sessions in Redis, shared by every gateway instance (docs/policies.md "Bounds"). All of an
 * organization's keys carry its id as one hash tag, so a cluster keeps them in one slot and each
 * script touches one node. A session is named `<session id>|<agent id>` (a session id has no `|`):
 *   o          sorted set of the organization's sessions, scored by their last call (ms)
 *   a:<agent>  the same for the agent's sessions
 *   l:<name>   list of the session's labels, in the order they were added
 *   c:<name>   hash: action -> calls let through
 *   q:<name>   list of the session's distinct actions, oldest first (the one forgotten past the bound)
 *   g:<agent>  hash: agent label -> until (ms, the Redis server's clock)
 * Every key of a session expires when it has been idle for idleMs; the sorted sets drop a session
 * past a bound or idle (at most two idle ones a call), so no call pays for the history.
 */
const CLOCK = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

const RECALL = `${CLOCK}
local p, agent, name, idle = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local labels, calls, agentLabels = {}, {}, {}
local touched = redis.call('ZSCORE', KEYS[1], name)
if touched and now - tonumber(touched) < idle then
  labels = redis.call('LRANGE', p .. 'l:' .. name, 0, -1)
  calls = redis.call('HGETALL', p .. 'c:' .. name)
end
local granted = redis.call('HGETALL', p .. 'g:' .. agent)
for i = 1, #granted, 2 do
  if tonumber(granted[i + 1]) > now then agentLabels[#agentLabels + 1] = granted[i] end
end
return {labels, calls, agentLabels}
`;

/* KEYS[1]: the organization's sessions. ARGV: prefix, agent, name, action, per agent, per organization, actions, labels, idle, n session labels, labels..., n agent labels, (label, ttl)... */
const REMEMBER = `${CLOCK}
local p, agent, name, action = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local perAgent, perOrg, maxActions, maxLabels, idle = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local okey, akey = KEYS[1], p .. 'a:' .. agent
local function drop(other)
  redis.call('DEL', p .. 'l:' .. other, p .. 'c:' .. other, p .. 'q:' .. other)
  redis.call('ZREM', okey, other)
  local bar = string.find(other, '|', 1, true)
  redis.call('ZREM', p .. 'a:' .. string.sub(other, bar + 1), other)
end
local function dropOldest(key)
  local oldest = redis.call('ZRANGE', key, 0, 0)
  if oldest[1] then drop(oldest[1]) end
end
local touched = redis.call('ZSCORE', okey, name)
if touched and now - tonumber(touched) >= idle then
  drop(name)
  touched = false
end
if not touched then
  for _, stale in ipairs(redis.call('ZRANGEBYSCORE', okey, '-inf', now - idle, 'LIMIT', 0, 2)) do drop(stale) end
  if redis.call('ZCARD', akey) >= perAgent then dropOldest(akey) end
  if redis.call('ZCARD', okey) >= perOrg then dropOldest(okey) end
end
redis.call('ZADD', okey, now, name)
redis.call('ZADD', akey, now, name)
local lkey, ckey, qkey, gkey = p .. 'l:' .. name, p .. 'c:' .. name, p .. 'q:' .. name, p .. 'g:' .. agent
if redis.call('HINCRBY', ckey, action, 1) == 1 then
  redis.call('RPUSH', qkey, action)
  if redis.call('LLEN', qkey) > maxActions then redis.call('HDEL', ckey, redis.call('LPOP', qkey)) end
end
local added = {}
local i = 11
for _ = 1, tonumber(ARGV[10]) do
  local label = ARGV[i]
  i = i + 1
  if not redis.call('LPOS', lkey, label) and redis.call('LLEN', lkey) < maxLabels then
    redis.call('RPUSH', lkey, label)
    added[#added + 1] = label
  end
end
local agentGrants = tonumber(ARGV[i])
i = i + 1
if agentGrants > 0 then
  local granted = redis.call('HGETALL', gkey)
  local held = 0
  for j = 1, #granted, 2 do
    if tonumber(granted[j + 1]) <= now then redis.call('HDEL', gkey, granted[j]) else held = held + 1 end
  end
  for _ = 1, agentGrants do
    local label, untilMs = ARGV[i], now + tonumber(ARGV[i + 1])
    i = i + 2
    local before = redis.call('HGET', gkey, label)
    if before then
      if tonumber(before) < untilMs then redis.call('HSET', gkey, label, tostring(untilMs)) end
    elseif held < maxLabels then
      redis.call('HSET', gkey, label, tostring(untilMs))
      held = held + 1
      added[#added + 1] = label
    end
    -- The hash lives as long as its longest label.
    if redis.call('PTTL', gkey) < untilMs - now then redis.call('PEXPIRE', gkey, untilMs - now) end
  end
end
for _, key in ipairs({okey, akey, lkey, ckey, qkey}) do
  if redis.call('EXISTS', key) == 1 then redis.call('PEXPIRE', key, idle) end
end
return added
`;

/* KEYS[1]: the organization's sessions (routing only). ARGV: prefix, name (a session's labels) or '' with agent (the agent's). */
const CLEAR = `
local p, name, agent = ARGV[1], ARGV[2], ARGV[3]
if name == '' then return redis.call('DEL', p .. 'g:' .. agent) end
return redis.call('DEL', p .. 'l:' .. name)
`;

type Script = (...args: unknown[]) => Promise<unknown>;

/**
 * The session memory of every gateway instance, in Redis (REDIS_URL): a label added through one
 * instance is read by a decision at any other, and a call let through anywhere counts in
 * `session.called` everywhere. The bounds are SessionStore's, applied atomically by one script a
 * call on the Redis server's clock.
 */
export class RedisSessionStore {
  private readonly perAgent: number;
  private readonly perOrg: number;
  private readonly maxActions: number;
  private readonly maxLabels: number;
  private readonly idleMs: number;

  constructor(
    private readonly redis: Redis,
    options: SessionStoreOptions = {},
  ) {
    this.perAgent = options.maxSessionsPerAgent ?? 64;
    this.perOrg = options.maxSessionsPerOrg ?? 10_000;
    this.maxActions = options.maxActionsPerSession ?? 256;
    this.maxLabels = options.maxLabels ?? 64;
    this.idleMs = options.idleMs ?? 3_600_000;
    redis.defineCommand('agentgovSessionRecall', { numberOfKeys: 1, lua: RECALL });
    redis.defineCommand('agentgovSessionRemember', { numberOfKeys: 1, lua: REMEMBER });
    redis.defineCommand('agentgovSessionClear', { numberOfKeys: 1, lua: CLEAR });
  }

  async recall(key: SessionKey): Promise<SessionFacts> {
    const [labels, flat, agentLabels] = (await this.script('agentgovSessionRecall').call(this.redis, ...routed(key.orgId), key.agentId, nameOf(key), String(this.idleMs))) as [string[], string[], string[]];
    const calls = Object.create(null) as Record<string, number>;
    for (let i = 0; i < flat.length; i += 2) calls[flat[i]] = Number(flat[i + 1]);
    return { id: key.sessionId, labels, agent_labels: agentLabels, calls };
  }

  async remember(key: SessionKey, action: string, grants: readonly LabelGrant[] | undefined): Promise<string[]> {
    const sessionLabels: string[] = [];
    const agentLabels: string[] = [];
    for (const grant of grants ?? []) {
      for (const label of grant.labels) {
        if (grant.scope === 'agent') agentLabels.push(label, String(Math.max(1, Math.ceil(grant.ttlMs))));
        else sessionLabels.push(label);
      }
    }
    const bounds = [this.perAgent, this.perOrg, this.maxActions, this.maxLabels, this.idleMs].map(String);
    const args = [...routed(key.orgId), key.agentId, nameOf(key), action, ...bounds, String(sessionLabels.length), ...sessionLabels, String(agentLabels.length / 2), ...agentLabels];
    return (await this.script('agentgovSessionRemember').call(this.redis, ...args)) as string[];
  }

  async clearLabels(orgId: string, agentId: string, sessionId: string | undefined): Promise<boolean> {
    const name = sessionId === undefined ? '' : nameOf({ orgId, agentId, sessionId });
    return Number(await this.script('agentgovSessionClear').call(this.redis, ...routed(orgId), name, agentId)) > 0;
  }

  private script(name: string): Script {
    return (this.redis as unknown as Record<string, Script>)[name];
  }
}

function prefixOf(orgId: string): string {
  return `agentgov:session:{${orgId}}:`;
}

/** The organization's sessions key (KEYS[1], which routes the script to the organization's slot) and the prefix of all its keys. */
function routed(orgId: string): [string, string] {
  const prefix = prefixOf(orgId);
  return [`${prefix}o`, prefix];
}

function nameOf(key: SessionKey): string {
  return `${key.sessionId}|${key.agentId}`;
}
