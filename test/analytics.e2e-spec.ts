import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { AuditRecord, AUDIT_SOURCES } from '../src/core/audit-record/audit-record';
import { AuditRetention } from '../src/gateway/audit/audit-retention';
import { rollupsFromEntries, ROLLUP_TABLES } from '../src/gateway/audit/audit-rollups';
import { AuditWriter } from '../src/gateway/audit/audit-writer';
import { TIER_NAMES } from '../src/core/policy-engine/tiers';
import { call, TestResponse } from './support/http-client';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * The Analytics API (docs/architecture.md "Analytics", issue #14) over a fixed data set written through
 * the real audit write path with chosen timestamps and latencies; the rollups it reads against
 * a direct aggregation of the raw entries after randomised traffic.
 */

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The whole file must run within one UTC hour (periods are whole hours): it waits out the end of an hour. */
const HOUR_MARGIN_MS = 150_000;

let gateway: TestGateway;
let org: TestOrganization;
let other: TestOrganization;
/** Start of the current UTC hour. */
let H: number;
const ids: Record<'alpha' | 'beta' | 'gamma' | 'delta' | 'omega', string> = { alpha: '', beta: '', gamma: '', delta: '', omega: '' };

async function createAgent(owner: TestOrganization, name: string, trustTier: string): Promise<string> {
  const response = await call<{ id: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: owner.adminToken, body: { name, trustTier } });
  expect(response.status).toBe(201);
  return response.body.id;
}

interface Fixture {
  at: number;
  source?: AuditRecord['source'];
  kind?: AuditRecord['kind'];
  agent: keyof typeof ids;
  name?: string;
  tier: string;
  action: string;
  decision: 'allow' | 'deny';
  policy: string;
  rule: string | null;
  latency: number | null;
  decisionLatency?: number | null;
  chain?: Array<keyof typeof ids>;
}

function record(orgId: string, fixture: Fixture): AuditRecord {
  return {
    ts: fixture.at,
    orgId,
    source: fixture.source ?? 'proxy',
    kind: fixture.kind ?? 'decision',
    traceId: null,
    agentId: ids[fixture.agent],
    agentName: fixture.name ?? fixture.agent,
    trustTier: fixture.tier,
    action: fixture.action,
    method: null,
    path: null,
    decision: fixture.decision,
    enforced: true,
    rateLimited: false,
    policyName: fixture.policy,
    rule: fixture.rule,
    reason: null,
    decisionLatencyMs: fixture.decisionLatency ?? null,
    latencyMs: fixture.latency,
    status: null,
    upstreamStatus: null,
    delegationChain: fixture.chain ? fixture.chain.map((agent) => ids[agent]) : null,
    input: null,
    details: null,
  };
}

/** The data set, relative to the current hour H (see the expected numbers in each test). */
function fixtures(): Fixture[] {
  const m = 60_000;
  return [
    // The 24 h period: hours H-23 … H.
    { at: H + 10 * m, agent: 'alpha', tier: 'verified', action: 'read:orders', decision: 'allow', policy: 'orders', rule: 'orders#0', latency: 10, decisionLatency: 0.5 },
    { at: H + 20 * m, source: 'pdp', agent: 'alpha', tier: 'verified', action: 'read:orders', decision: 'deny', policy: 'orders', rule: 'orders#1', latency: null, decisionLatency: 2 },
    { at: H + 30 * m, agent: 'alpha', tier: 'verified', action: 'read:orders', decision: 'allow', policy: 'orders', rule: 'orders#0', latency: 6 },
    { at: H + 5 * m, source: 'admin', kind: 'admin', agent: 'alpha', tier: 'verified', action: 'admin:agent.update', decision: 'allow', policy: 'orders', rule: 'x', latency: 999 },
    { at: H - 1 * HOUR + 5 * m, source: 'check', agent: 'beta', tier: 'trusted', action: 'write:orders', decision: 'allow', policy: 'orders', rule: null, latency: 20 },
    { at: H - 1 * HOUR + 30 * m, source: 'sidecar', agent: 'beta', tier: 'trusted', action: 'write:orders', decision: 'deny', policy: 'writes', rule: 'writes#0', latency: 30, chain: ['alpha', 'beta'] },
    { at: H - 2 * HOUR, source: 'pdp', agent: 'alpha', tier: 'verified', action: 'read:orders', decision: 'allow', policy: 'orders', rule: 'orders#0', latency: null },
    { at: H - 5 * HOUR, source: 'mcp', agent: 'gamma', tier: 'unverified', action: 'tool:search', decision: 'allow', policy: 'default', rule: null, latency: 40, chain: ['delta', 'alpha', 'gamma'] },
    { at: H - 5 * HOUR + 1 * m, agent: 'gamma', tier: 'unverified', action: 'tool:search', decision: 'deny', policy: 'writes', rule: 'writes#2', latency: 50, chain: ['alpha', 'gamma'] },
    { at: H - 5 * HOUR + 2 * m, agent: 'gamma', name: 'gamma-renamed', tier: 'untrusted', action: 'tool:search', decision: 'deny', policy: 'writes', rule: 'writes#2', latency: 70 },
    // The 24 h period before it: hours H-47 … H-24.
    { at: H - 30 * HOUR, agent: 'alpha', tier: 'verified', action: 'read:orders', decision: 'allow', policy: 'orders', rule: 'orders#0', latency: 8 },
    { at: H - 30 * HOUR + 1 * m, agent: 'delta', tier: 'privileged', action: 'read:orders', decision: 'allow', policy: 'orders', rule: 'orders#0', latency: 12 },
    // Within 7 days, and within 30 days.
    { at: H - 72 * HOUR, agent: 'delta', tier: 'privileged', action: 'read:reports', decision: 'allow', policy: 'reports', rule: 'reports#0', latency: 100 },
    { at: H - 480 * HOUR, agent: 'alpha', tier: 'verified', action: 'read:orders', decision: 'deny', policy: 'orders', rule: 'orders#1', latency: 4, chain: ['beta', 'alpha'] },
    // The 30 days before the 30 d period.
    { at: H - 800 * HOUR, agent: 'beta', tier: 'trusted', action: 'write:orders', decision: 'allow', policy: 'orders', rule: 'orders#0', latency: 16 },
  ];
}

async function get<T = Record<string, unknown>>(path: string, owner: TestOrganization = org): Promise<TestResponse<T>> {
  return call<T>(gateway.url, 'GET', path, { adminToken: owner.adminToken });
}

async function ok<T = Record<string, unknown>>(path: string, owner: TestOrganization = org): Promise<T> {
  const response = await get<T>(path, owner);
  expect(response.status).toBe(200);
  return response.body;
}

async function waitOutEndOfHour(): Promise<void> {
  const left = HOUR - (Date.now() % HOUR);
  if (left < HOUR_MARGIN_MS) await new Promise((resolve) => setTimeout(resolve, left + 1000));
}

beforeAll(async () => {
  await waitOutEndOfHour();
  H = Date.now() - (Date.now() % HOUR);
  gateway = await startGateway({ AUDIT_BATCH_SIZE: '7' });
  org = await createOrganization(gateway, 'enterprise', 'Analytics org');
  other = await createOrganization(gateway, 'enterprise', 'Analytics other org');
  ids.alpha = await createAgent(org, 'alpha', 'verified');
  ids.beta = await createAgent(org, 'beta', 'trusted');
  ids.gamma = await createAgent(org, 'gamma', 'unverified');
  ids.delta = await createAgent(org, 'delta', 'privileged');
  ids.omega = await createAgent(other, 'omega', 'trusted');
  const writer = gateway.app.get(AuditWriter);
  for (const fixture of fixtures()) writer.record(record(org.id, fixture));
  writer.record(record(other.id, { at: H + 1000, agent: 'omega', tier: 'elevated', action: 'read:other', decision: 'deny', policy: 'others', rule: 'others#0', latency: 1000, chain: ['omega', 'omega'] }));
  await writer.drain();
}, 240_000);

afterAll(async () => {
  await gateway?.close();
});

describe('overview', () => {
  it('reports the 24 h period against the 24 h before it', async () => {
    // 9 decisions (the admin entry does not count); rules fired on 7; latencies 10 2 6 20 30 40 50 70 (one has none): 228 / 8.
    // Before: 2 decisions, both rule-matched, agents alpha and delta, latency (8 + 12) / 2.
    expect(await ok('/admin/analytics/overview')).toEqual({
      period: '24h',
      totalRequests: 9,
      enforcementRate: 77.78,
      activeAgents: 3,
      avgLatencyMs: 28.5,
      trends: { totalRequests: 350, enforcementRate: -22.22, activeAgents: 1, avgLatencyMs: 18.5 },
    });
    expect(await ok('/admin/analytics/overview?period=24h')).toEqual(await ok('/admin/analytics/overview'));
  });

  it('reports a zero baseline as 100 percent growth (7 d) and counts every period exactly (30 d)', async () => {
    // 12 decisions, 10 rule-matched, 4 agents, latency 348 / 11; nothing in the 7 days before.
    expect(await ok('/admin/analytics/overview?period=7d')).toEqual({
      period: '7d',
      totalRequests: 12,
      enforcementRate: 83.33,
      activeAgents: 4,
      avgLatencyMs: 31.636,
      trends: { totalRequests: 100, enforcementRate: 83.33, activeAgents: 4, avgLatencyMs: 31.636 },
    });
    // 13 decisions, 11 rule-matched, latency 352 / 12; before: one decision by beta, latency 16.
    expect(await ok('/admin/analytics/overview?period=30d')).toEqual({
      period: '30d',
      totalRequests: 13,
      enforcementRate: 84.62,
      activeAgents: 4,
      avgLatencyMs: 29.333,
      trends: { totalRequests: 1200, enforcementRate: -15.38, activeAgents: 3, avgLatencyMs: 13.333 },
    });
  });
});

describe('timeseries', () => {
  it('has every hour of the period, empty ones with zeros, and the counts of each', async () => {
    const body = await ok<{ period: string; bucket: string; data: Array<{ time: string; allowed: number; denied: number }> }>('/admin/analytics/timeseries');
    expect(body.period).toBe('24h');
    expect(body.bucket).toBe('hour');
    const counts: Record<number, [number, number]> = { 0: [2, 1], 1: [1, 1], 2: [1, 0], 5: [1, 2] };
    expect(body.data).toEqual(
      Array.from({ length: 24 }, (_, i) => {
        const hoursAgo = 23 - i;
        const [allowed, denied] = counts[hoursAgo] ?? [0, 0];
        return { time: new Date(H - hoursAgo * HOUR).toISOString(), allowed, denied };
      }),
    );
  });

  it('buckets by UTC day', async () => {
    const body = await ok<{ bucket: string; data: Array<{ time: string; allowed: number; denied: number }> }>('/admin/analytics/timeseries?period=7d&bucket=day');
    expect(body.bucket).toBe('day');
    const firstDay = H - 167 * HOUR - ((H - 167 * HOUR) % DAY);
    const expected = new Map<number, { time: string; allowed: number; denied: number }>();
    for (let day = firstDay; day <= H; day += DAY) expected.set(day, { time: new Date(day).toISOString(), allowed: 0, denied: 0 });
    for (const fixture of fixtures().filter((f) => f.kind !== 'admin' && f.at >= H - 167 * HOUR)) {
      const bucket = expected.get(fixture.at - (fixture.at % DAY))!;
      bucket[fixture.decision === 'allow' ? 'allowed' : 'denied']++;
    }
    expect(body.data).toEqual([...expected.values()]);
    expect(body.data.reduce((sum, point) => sum + point.allowed + point.denied, 0)).toBe(12);
  });
});

describe('agents', () => {
  const alpha = () => ({ id: ids.alpha, name: 'alpha', trustTier: 'verified', requests: 4, allowed: 3, denied: 1, avgLatencyMs: 6, lastActive: new Date(H + 30 * 60_000).toISOString() });
  const beta = () => ({ id: ids.beta, name: 'beta', trustTier: 'trusted', requests: 2, allowed: 1, denied: 1, avgLatencyMs: 25, lastActive: new Date(H - HOUR + 30 * 60_000).toISOString() });
  // Its latest decision named it gamma-renamed and spelled its tier `untrusted`: the lowest rung, `sandboxed`.
  const gamma = () => ({
    id: ids.gamma,
    name: 'gamma-renamed',
    trustTier: 'sandboxed',
    requests: 3,
    allowed: 1,
    denied: 2,
    avgLatencyMs: 53.333,
    lastActive: new Date(H - 5 * HOUR + 2 * 60_000).toISOString(),
  });

  it('sorts by requests (default), denials or latency, and limits the list', async () => {
    expect(await ok('/admin/analytics/agents')).toEqual({ period: '24h', sort: 'requests', agents: [alpha(), gamma(), beta()] });
    expect(await ok('/admin/analytics/agents?sort=denied')).toEqual({ period: '24h', sort: 'denied', agents: [gamma(), alpha(), beta()] });
    expect(await ok('/admin/analytics/agents?sort=latency&limit=2')).toEqual({ period: '24h', sort: 'latency', agents: [gamma(), beta()] });
    expect(await ok('/admin/analytics/agents?limit=1')).toEqual({ period: '24h', sort: 'requests', agents: [alpha()] });
  });

  it('adds up the agents of a longer period', async () => {
    const body = await ok<{ agents: unknown[] }>('/admin/analytics/agents?period=7d&sort=latency');
    expect(body.agents).toEqual([
      { id: ids.delta, name: 'delta', trustTier: 'privileged', requests: 2, allowed: 2, denied: 0, avgLatencyMs: 56, lastActive: new Date(H - 30 * HOUR + 60_000).toISOString() },
      gamma(),
      beta(),
      { ...alpha(), requests: 5, allowed: 4, avgLatencyMs: 6.5 },
    ]);
  });
});

describe('policies', () => {
  it('counts each policy’s decisions, rates and most frequent action; the default decision is no policy', async () => {
    expect(await ok('/admin/analytics/policies')).toEqual({
      period: '24h',
      policies: [
        { name: 'orders', triggered: 5, allowRate: 80, denyRate: 20, topAction: 'read:orders' },
        { name: 'writes', triggered: 3, allowRate: 0, denyRate: 100, topAction: 'tool:search' },
      ],
    });
    expect(await ok('/admin/analytics/policies?period=30d')).toEqual({
      period: '30d',
      policies: [
        { name: 'orders', triggered: 8, allowRate: 75, denyRate: 25, topAction: 'read:orders' },
        { name: 'writes', triggered: 3, allowRate: 0, denyRate: 100, topAction: 'tool:search' },
        { name: 'reports', triggered: 1, allowRate: 100, denyRate: 0, topAction: 'read:reports' },
      ],
    });
  });
});

describe('delegations', () => {
  it('counts delegated requests, their depth and denials, and the most frequent links by agent name', async () => {
    // Depths 1 1 1 1 2 1 3 2 1 over 9 decisions.
    expect(await ok('/admin/analytics/delegations')).toEqual({
      period: '24h',
      totalChains: 3,
      avgDepth: 1.44,
      blockedChains: 2,
      topPairs: [
        { fromAgent: 'alpha', toAgent: 'gamma', count: 2 },
        { fromAgent: 'alpha', toAgent: 'beta', count: 1 },
        { fromAgent: 'delta', toAgent: 'alpha', count: 1 },
      ],
    });
    expect(await ok('/admin/analytics/delegations?period=30d')).toEqual({
      period: '30d',
      totalChains: 4,
      avgDepth: 1.38,
      blockedChains: 3,
      topPairs: [
        { fromAgent: 'alpha', toAgent: 'gamma', count: 2 },
        { fromAgent: 'alpha', toAgent: 'beta', count: 1 },
        { fromAgent: 'beta', toAgent: 'alpha', count: 1 },
        { fromAgent: 'delta', toAgent: 'alpha', count: 1 },
      ],
    });
  });
});

describe('trust distribution', () => {
  it('lists every tier in the analytics vocabulary, lowest first', async () => {
    expect(await ok('/admin/analytics/trust-distribution')).toEqual({
      period: '24h',
      tiers: [
        { tier: 'sandboxed', agentCount: 1, requestCount: 3, pct: 33.33 },
        { tier: 'verified', agentCount: 1, requestCount: 4, pct: 44.44 },
        { tier: 'trusted', agentCount: 1, requestCount: 2, pct: 22.22 },
        { tier: 'privileged', agentCount: 0, requestCount: 0, pct: 0 },
      ],
    });
    expect(await ok('/admin/analytics/trust-distribution?period=30d')).toEqual({
      period: '30d',
      tiers: [
        { tier: 'sandboxed', agentCount: 1, requestCount: 3, pct: 23.08 },
        { tier: 'verified', agentCount: 1, requestCount: 6, pct: 46.15 },
        { tier: 'trusted', agentCount: 1, requestCount: 2, pct: 15.38 },
        { tier: 'privileged', agentCount: 1, requestCount: 2, pct: 15.38 },
      ],
    });
  });
});

describe('latency heatmap', () => {
  /** Cells of the decisions since `from`, from the data set itself. */
  function cells(from: number): Array<{ dayOfWeek: number; hourOfDay: number; avgLatencyMs: number; count: number }> {
    const byCell = new Map<string, { dayOfWeek: number; hourOfDay: number; sum: number; latencies: number; count: number }>();
    for (const fixture of fixtures().filter((f) => f.kind !== 'admin' && f.at >= from)) {
      const time = new Date(fixture.at);
      const key = `${time.getUTCDay()}-${String(time.getUTCHours()).padStart(2, '0')}`;
      const cell = byCell.get(key) ?? { dayOfWeek: time.getUTCDay(), hourOfDay: time.getUTCHours(), sum: 0, latencies: 0, count: 0 };
      byCell.set(key, cell);
      cell.count++;
      const latency = fixture.latency ?? fixture.decisionLatency ?? null;
      if (latency !== null) {
        cell.sum += latency;
        cell.latencies++;
      }
    }
    return [...byCell.values()]
      .sort((a, b) => a.dayOfWeek - b.dayOfWeek || a.hourOfDay - b.hourOfDay)
      .map((cell) => ({ dayOfWeek: cell.dayOfWeek, hourOfDay: cell.hourOfDay, avgLatencyMs: cell.latencies === 0 ? 0 : Math.round((cell.sum / cell.latencies) * 1000) / 1000, count: cell.count }));
  }

  it('defaults to 30 days, by UTC day of week and hour', async () => {
    const body = await ok<{ period: string; cells: unknown[] }>('/admin/analytics/latency-heatmap');
    expect(body).toEqual({ period: '30d', cells: cells(H - 719 * HOUR) });
    // The current hour holds three decisions with latencies 10, 2 (decision only) and 6.
    const now = new Date(H);
    expect(body.cells).toContainEqual({ dayOfWeek: now.getUTCDay(), hourOfDay: now.getUTCHours(), avgLatencyMs: 6, count: 3 });
    expect(body.cells).toHaveLength(7);
  });

  it('is sparse for a short period', async () => {
    expect(await ok('/admin/analytics/latency-heatmap?period=24h')).toEqual({ period: '24h', cells: cells(H - 23 * HOUR) });
  });
});

describe('audit stats', () => {
  it('answers from the same rollups', async () => {
    expect(await ok('/admin/audit/stats')).toEqual({ total: 9, allowed: 5, denied: 4, period: '24h' });
    expect(await ok('/admin/audit/stats?period=30d')).toEqual({ total: 13, allowed: 8, denied: 5, period: '30d' });
  });
});

describe('organizations', () => {
  it('see only their own decisions', async () => {
    expect(await ok('/admin/analytics/overview', other)).toEqual({
      period: '24h',
      totalRequests: 1,
      enforcementRate: 100,
      activeAgents: 1,
      avgLatencyMs: 1000,
      trends: { totalRequests: 100, enforcementRate: 100, activeAgents: 1, avgLatencyMs: 1000 },
    });
    expect(await ok('/admin/analytics/agents', other)).toEqual({
      period: '24h',
      sort: 'requests',
      agents: [{ id: ids.omega, name: 'omega', trustTier: 'trusted', requests: 1, allowed: 0, denied: 1, avgLatencyMs: 1000, lastActive: new Date(H + 1000).toISOString() }],
    });
    expect(await ok('/admin/analytics/policies', other)).toEqual({ period: '24h', policies: [{ name: 'others', triggered: 1, allowRate: 0, denyRate: 100, topAction: 'read:other' }] });
    expect(await ok('/admin/analytics/delegations', other)).toEqual({
      period: '24h',
      totalChains: 1,
      avgDepth: 2,
      blockedChains: 1,
      topPairs: [{ fromAgent: 'omega', toAgent: 'omega', count: 1 }],
    });
    expect((await ok<{ tiers: Array<{ tier: string; requestCount: number }> }>('/admin/analytics/trust-distribution', other)).tiers.map((tier) => tier.requestCount)).toEqual([0, 0, 1, 0]);
    expect((await ok<{ data: Array<{ denied: number }> }>('/admin/analytics/timeseries', other)).data.map((point) => point.denied).reduce((a, b) => a + b)).toBe(1);
    expect((await ok<{ cells: unknown[] }>('/admin/analytics/latency-heatmap', other)).cells).toHaveLength(1);
    expect(await ok('/admin/audit/stats', other)).toEqual({ total: 1, allowed: 0, denied: 1, period: '24h' });
  });
});

describe('retention', () => {
  it('prunes the rollups with the entries', async () => {
    const free = await createOrganization(gateway, 'free', 'Analytics free org');
    const writer = gateway.app.get(AuditWriter);
    const fixture = { agent: 'alpha', tier: 'verified', action: 'read:orders', decision: 'allow', policy: 'orders', rule: 'orders#0', latency: 5 } as const;
    writer.record(record(free.id, { ...fixture, at: H - 10 * DAY }));
    writer.record(record(free.id, { ...fixture, at: H - HOUR }));
    await writer.drain();
    expect(await ok('/admin/analytics/overview?period=30d', free)).toMatchObject({ totalRequests: 2, activeAgents: 1 });
    // The free plan keeps 7 days.
    await gateway.app.get(AuditRetention).enforce(Date.now());
    expect(await ok('/admin/analytics/overview?period=30d', free)).toMatchObject({ totalRequests: 1, activeAgents: 1 });
    const entries = await get<{ entries: unknown[] }>('/admin/audit?limit=10', free);
    expect(entries.body.entries).toHaveLength(1);
    expect(await ok('/admin/analytics/overview?period=30d')).toMatchObject({ totalRequests: 13 });
  });
});

describe('bad parameters', () => {
  const endpoints = ['overview', 'timeseries', 'agents', 'policies', 'delegations', 'trust-distribution', 'latency-heatmap'];

  it.each(endpoints)('%s: a period other than 24h, 7d or 30d is invalid_period', async (endpoint) => {
    for (const query of ['period=1y', 'period=24H', 'period=', 'period=7d&period=30d']) {
      const response = await get(`/admin/analytics/${endpoint}?${query}`);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 'invalid_period', message: 'period must be one of: 24h, 7d, 30d' });
    }
  });

  it.each(endpoints)('%s: needs the admin token', async (endpoint) => {
    const response = await call(gateway.url, 'GET', `/admin/analytics/${endpoint}`);
    expect(response.status).toBe(401);
    expect((await call(gateway.url, 'GET', `/admin/analytics/${endpoint}`, { adminToken: 'not-a-token' })).status).toBe(401);
  });

  it.each([
    ['timeseries?bucket=week', 'bucket must be one of: hour, day'],
    ['timeseries?bucket=', 'bucket must be one of: hour, day'],
    ['agents?sort=name', 'sort must be one of: requests, denied, latency'],
    ['agents?limit=0', 'limit must be a whole number from 1 to 100'],
    ['agents?limit=101', 'limit must be a whole number from 1 to 100'],
    ['agents?limit=abc', 'limit must be a whole number from 1 to 100'],
    ['agents?limit=2.5', 'limit must be a whole number from 1 to 100'],
    ['agents?limit=1e1', 'limit must be a whole number from 1 to 100'],
    ['agents?limit=0x10', 'limit must be a whole number from 1 to 100'],
    ['agents?limit=%2B5', 'limit must be a whole number from 1 to 100'],
    ['agents?limit=10&limit=20', 'limit must be a whole number from 1 to 100'],
    ['overview?bucket=hour', 'unknown field bucket'],
    ['policies?limit=5', 'unknown field limit'],
  ])('%s is 400 naming the parameter', async (path, message) => {
    const response = await get(`/admin/analytics/${path}`);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: 'invalid_request', message });
  });
});

describe('rollups', () => {
  const agents = ['agent_p1', 'agent_p2', 'agent\twith tab', 'agent\\3'];
  const text = fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('a\tb', 'back\\slash', 'new\nline', ''));
  const latency = fc.option(fc.integer({ min: 0, max: 250_000 }).map((us) => us / 1000));
  const traffic = fc.array(
    fc.record({
      org: fc.integer({ min: 0, max: 1 }),
      hoursAgo: fc.integer({ min: 0, max: 50 }),
      offsetMs: fc.integer({ min: 0, max: HOUR - 1 }),
      admin: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
      source: fc.constantFrom(...AUDIT_SOURCES.filter((source) => source !== 'admin')),
      agentId: fc.option(fc.constantFrom(...agents)),
      agentName: fc.option(text),
      trustTier: fc.option(fc.constantFrom(...TIER_NAMES, 'bogus')),
      action: fc.constantFrom('read:a', 'write:b', 'tool:c\td'),
      allowed: fc.boolean(),
      policyName: fc.option(fc.constantFrom('p1', 'p2', 'default', 'p\\3')),
      rule: fc.option(fc.constantFrom('p1#0', 'p2#default')),
      latencyMs: latency,
      decisionLatencyMs: latency,
      chain: fc.option(fc.array(fc.constantFrom(...agents, 'x"y'), { maxLength: 4 })),
    }),
    { minLength: 1, maxLength: 40 },
  );

  /** Rows of a query, each as text, sorted: the two sides' drivers type numbers differently. */
  async function rows(dataSource: DataSource, sql: string, params: unknown[]): Promise<string[]> {
    const result: Array<Record<string, unknown>> = await dataSource.query(sql, params);
    return result.map((row) => JSON.stringify(Object.values(row).map((value) => (value instanceof Date ? value.toISOString() : value === null ? null : String(value))))).sort();
  }

  /** Randomised traffic into two fresh organizations of `target`, `runs` times; after each, every rollup table equals the direct aggregation. */
  async function checkAfterTraffic(target: TestGateway, runs: number): Promise<void> {
    const orgs = [await createOrganization(target, 'enterprise', 'Rollups A'), await createOrganization(target, 'enterprise', 'Rollups B')];
    const orgIds = orgs.map((o) => o.id);
    const writer = target.app.get(AuditWriter);
    const dataSource = target.app.get(DataSource);
    const base = Date.now();
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(traffic, async (batch) => {
        for (const r of batch) {
          writer.record({
            ts: base - r.hoursAgo * HOUR - r.offsetMs,
            orgId: orgIds[r.org],
            source: r.admin ? 'admin' : r.source,
            kind: r.admin ? 'admin' : 'decision',
            traceId: null,
            agentId: r.agentId,
            agentName: r.agentName,
            trustTier: r.trustTier,
            action: r.action,
            method: null,
            path: null,
            decision: r.allowed ? 'allow' : 'deny',
            enforced: true,
            rateLimited: false,
            policyName: r.policyName,
            rule: r.rule,
            reason: null,
            decisionLatencyMs: r.decisionLatencyMs,
            latencyMs: r.latencyMs,
            status: null,
            upstreamStatus: null,
            delegationChain: r.chain,
            input: null,
            details: null,
          });
        }
        await writer.drain();
        for (const { table, columns, select } of rollupsFromEntries('e.org_id = ANY($1::text[])')) {
          const direct = await rows(dataSource, select, [orgIds]);
          const kept = await rows(dataSource, `SELECT ${columns} FROM ${table} WHERE org_id = ANY($1::text[])`, [orgIds]);
          expect(kept).toEqual(direct);
        }
        checked++;
      }),
      { numRuns: runs },
    );
    expect(checked).toBe(runs);
    const [{ count }] = await dataSource.query(`SELECT count(*) AS count FROM ${ROLLUP_TABLES[0]} WHERE org_id = ANY($1::text[])`, [orgIds]);
    expect(Number(count)).toBeGreaterThan(runs);
  }

  it('equal a direct aggregation of the raw entries after randomised traffic (audit worker)', async () => {
    await checkAfterTraffic(gateway, 25);
  }, 240_000);

  it('equal it on the embedded database too, written in the gateway’s thread', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-analytics-embedded-'));
    const embedded = await startGateway({ DATABASE_URL: '', DATA_DIR: dataDir, AUDIT_BATCH_SIZE: '7' });
    try {
      await checkAfterTraffic(embedded, 5);
    } finally {
      await embedded.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});
