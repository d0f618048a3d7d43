import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type { LabelGrant } from '../../core/policy-engine/types';
import { RedisSessionStore } from './redis-session-store';

/** The Redis session store's bounds (docs/policies.md "Bounds"), against the Redis the tests run on. */

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 2 });
});
afterAll(() => redis.disconnect());

const sessionLabel = (...labels: string[]): LabelGrant[] => [{ policy: 'p', rule: 'r', labels, scope: 'session', ttlMs: 0 }];
const agentLabel = (ttlMs: number, ...labels: string[]): LabelGrant[] => [{ policy: 'p', rule: 'r', labels, scope: 'agent', ttlMs }];

function freshOrg(): string {
  return `org_spec_${randomUUID()}`;
}

it('ends the organization least recently used session past its bound, with its labels', async () => {
  const store = new RedisSessionStore(redis, { maxSessionsPerOrg: 3 });
  const orgId = freshOrg();
  const key = (agentId: string, sessionId: string) => ({ orgId, agentId, sessionId });
  // A session's last use is the Redis server's clock in milliseconds, and sessions used in one
  // millisecond are ordered by name: each use here is a millisecond apart, as uses that are not
  // simultaneous are.
  const nextMillisecond = () => new Promise((resolve) => setTimeout(resolve, 2));
  await store.remember(key('a1', 's1'), 'read:x', sessionLabel('private_data'));
  await nextMillisecond();
  await store.remember(key('a2', 's2'), 'read:x', undefined);
  await nextMillisecond();
  await store.remember(key('a3', 's3'), 'read:x', undefined);
  await nextMillisecond();
  // s1 used again: s2 is now the oldest, and the fourth session ends it.
  await store.remember(key('a1', 's1'), 'read:y', undefined);
  await nextMillisecond();
  await store.remember(key('a4', 's4'), 'read:x', undefined);
  expect(await redis.zcard(`agentgov:session:{${orgId}}:o`)).toBe(3);
  expect((await store.recall(key('a2', 's2'))).calls).toEqual({});
  expect(await store.recall(key('a1', 's1'))).toEqual({ id: 's1', labels: ['private_data'], agent_labels: [], calls: { 'read:x': 1, 'read:y': 1 } });
  expect(await redis.exists(`agentgov:session:{${orgId}}:c:s2|a2`)).toBe(0);
});

it('forgets the oldest action past the bound of distinct actions and keeps at most maxLabels labels', async () => {
  const store = new RedisSessionStore(redis, { maxActionsPerSession: 2, maxLabels: 2 });
  const key = { orgId: freshOrg(), agentId: 'a', sessionId: 's' };
  await store.remember(key, 'read:1', sessionLabel('one'));
  await store.remember(key, 'read:2', sessionLabel('two'));
  await store.remember(key, 'read:2', undefined);
  expect(await store.remember(key, 'read:3', sessionLabel('three', 'one'))).toEqual([]);
  expect(await store.recall(key)).toEqual({ id: 's', labels: ['one', 'two'], agent_labels: [], calls: { 'read:2': 2, 'read:3': 1 } });
});

it('keeps agent labels for their ttl in every session of the agent, answering only the new ones as added', async () => {
  const store = new RedisSessionStore(redis);
  const orgId = freshOrg();
  expect(await store.remember({ orgId, agentId: 'a', sessionId: 's1' }, 'read:web', agentLabel(300, 'untrusted_content'))).toEqual(['untrusted_content']);
  expect(await store.remember({ orgId, agentId: 'a', sessionId: 's2' }, 'read:web', agentLabel(300, 'untrusted_content'))).toEqual([]);
  expect((await store.recall({ orgId, agentId: 'a', sessionId: 'other' })).agent_labels).toEqual(['untrusted_content']);
  expect((await store.recall({ orgId, agentId: 'b', sessionId: 's1' })).agent_labels).toEqual([]);
  await new Promise((resolve) => setTimeout(resolve, 400));
  expect((await store.recall({ orgId, agentId: 'a', sessionId: 's1' })).agent_labels).toEqual([]);
});

it('ends an idle session: its keys expire, and a later call opens a fresh one', async () => {
  const store = new RedisSessionStore(redis, { idleMs: 200 });
  const key = { orgId: freshOrg(), agentId: 'a', sessionId: 's' };
  await store.remember(key, 'read:customers/1', sessionLabel('private_data'));
  const ttl = await redis.pttl(`agentgov:session:{${key.orgId}}:l:s|a`);
  expect(ttl).toBeGreaterThan(0);
  expect(ttl).toBeLessThanOrEqual(200);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(await store.recall(key)).toEqual({ id: 's', labels: [], agent_labels: [], calls: {} });
  await store.remember(key, 'read:x', undefined);
  expect(await store.recall(key)).toEqual({ id: 's', labels: [], agent_labels: [], calls: { 'read:x': 1 } });
});

it('clears one session labels or the agent own, saying whether there were any', async () => {
  const store = new RedisSessionStore(redis);
  const orgId = freshOrg();
  const key = { orgId, agentId: 'a', sessionId: 's' };
  await store.remember(key, 'read:x', [...sessionLabel('private_data'), ...agentLabel(60_000, 'untrusted_content')]);
  expect(await store.clearLabels(orgId, 'a', 's')).toBe(true);
  expect(await store.clearLabels(orgId, 'a', 's')).toBe(false);
  expect(await store.recall(key)).toEqual({ id: 's', labels: [], agent_labels: ['untrusted_content'], calls: { 'read:x': 1 } });
  expect(await store.clearLabels(orgId, 'a', undefined)).toBe(true);
  expect((await store.recall(key)).agent_labels).toEqual([]);
});
