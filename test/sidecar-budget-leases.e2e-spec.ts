import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { call, TestResponse } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { eventually, freePort, GATEWAY_MAIN, launch, ServiceProcess, SIDECAR_MAIN, waitFor, HEALTH_TOKEN, waitForHealth } from './support/processes';
import { testDatabaseKind } from './support/test-gateway';

/**
 * Budgets at the edge (docs/sidecar.md "Budgets"): the built gateway (totals in Redis) and the
 * built sidecar as separate processes. The sidecar spends a budget from a lease the gateway
 * granted; with the gateway stopped it admits exactly what is left of its lease, then refuses
 * with budget_exceeded; its unspent lease goes back to the budget once the gateway is back, and
 * every edge decision reaches the gateway's trail with its budget details.
 */

const ADMIN_TOKEN = 'sidecar-leases-admin-token-0123456789';
// Totals live in the run's Redis: a policy name of its own keeps them apart from earlier runs.
const POLICY = `edge-spend-${randomBytes(4).toString('hex')}`;
const POLICIES = `policies:
  - name: ${POLICY}
    match: { plugin: Llm }
    rules:
      - name: hourly
        condition: budget(per_agent, 100, 1h)
        action: deny
        cost: 10
        reason: The hourly model budget is spent
  - name: exfiltration
    rules:
      - name: reads-customers
        condition: action starts_with "read:customers/"
        action: label
        labels: [private_data]
        reason: Customer records were read
      - name: fetches-web
        condition: action starts_with "read:web/"
        action: label
        labels: [untrusted_content]
        scope: agent
        ttl: 1h
        reason: An untrusted web page was fetched
      - name: no-way-out
        condition: action starts_with "write:mail/" and session.labels.has("private_data") and agent.labels.has("untrusted_content")
        action: deny
        reason: Private data and untrusted content; nothing leaves by mail
`;
const LEASE_TTL_SECONDS = 12;

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sidecar-leases-'));
let database: OwnDatabase | undefined;
let gatewayPort: number;
let gateway: ServiceProcess;
let sidecar: ServiceProcess;
let apiKey: string;
const started: ServiceProcess[] = [];
const agents: Record<'offline' | 'returner' | 'browser', { id: string; token: string }> = {} as never;

async function startGateway(): Promise<ServiceProcess> {
  const service = launch(GATEWAY_MAIN, gatewayPort, {
    ADMIN_TOKEN,
    PUBLIC_URL: 'http://gateway.leases.test',
    PDP_GRPC_PORT: '0',
    POLICIES_FILE: path.join(scratch, 'policies.yaml'),
    SIGNING_KEY_FILE: path.join(scratch, 'signing-key.pem'),
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    BUDGET_LEASE_PERCENT: '30',
    BUDGET_LEASE_TTL: `${LEASE_TTL_SECONDS}s`,
    AUDIT_FLUSH_MS: '10',
    LOG_LEVEL: 'warn',
    ...(database ? { DATABASE_URL: database.url } : { DATA_DIR: path.join(scratch, 'data') }),
  });
  started.push(service);
  await waitFor(service, '/health', (status) => status === 200, 90_000);
  return service;
}

const admin = <T = Record<string, unknown>>(method: string, route: string, body?: unknown, token = ADMIN_TOKEN) => call<T>(gateway.url, method, route, { adminToken: token, body });

function enforce(agent: { id: string; token: string }): Promise<TestResponse> {
  return call(sidecar.url, 'POST', '/enforce', { bearer: agent.token, body: { agentId: agent.id, action: 'call:llm/complete', resource: 'llm', context: { plugin: 'Llm', function: 'Complete' } } });
}

/** How many of `times` checks at the gateway itself the budget admits, one after another. */
async function admittedAtGateway(agent: { id: string }, times: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < times; i++) {
    const answer = await call(gateway.url, 'POST', '/v1/check', { body: { agentId: agent.id, plugin: 'Llm', function: 'Complete' }, headers: { 'x-api-key': apiKey } });
    statuses.push(answer.status);
  }
  return statuses;
}

beforeAll(async () => {
  fs.writeFileSync(path.join(scratch, 'policies.yaml'), POLICIES);
  if (testDatabaseKind() === 'postgres') database = await ownDatabase();
  gatewayPort = await freePort();
  gateway = await startGateway();
  for (const name of ['offline', 'returner', 'browser'] as const) {
    const created = await admin<{ id: string; token: string }>('POST', '/admin/agents', { name: `lease-${name}`, trustTier: 'verified' });
    expect(created.status).toBe(201);
    agents[name] = created.body;
  }
  apiKey = (await admin<{ key: string }>('POST', '/admin/api-keys', { name: 'lease-adapter' })).body.key;
  const sidecarToken = await admin<{ token: string }>('POST', '/admin/sidecar-tokens', { name: 'lease-edge' });
  expect(sidecarToken.status).toBe(201);
  sidecar = launch(SIDECAR_MAIN, await freePort(), {
    METRICS_TOKEN: HEALTH_TOKEN,
    GATEWAY_URL: gateway.url,
    ADMIN_TOKEN: sidecarToken.body.token,
    CACHE_DIR: path.join(scratch, 'cache'),
    BUNDLE_SYNC_INTERVAL: '1',
    AUDIT_FORWARD_INTERVAL_MS: '100',
    SIDECAR_ID: 'sc_lease-edge',
    LOG_LEVEL: 'warn',
  });
  started.push(sidecar);
  await waitForHealth(sidecar, (status, body) => status === 200 && (body.cachedAgents as number) >= 3, 60_000);
}, 240_000);

afterAll(async () => {
  for (const service of started) await service.kill();
  await database?.dispose();
  fs.rmSync(scratch, { recursive: true, force: true });
}, 60_000);

describe('a sidecar spending budgets from leases', () => {
  it('admits exactly its lease while the gateway is stopped, then refuses with budget_exceeded; the fleet never overspends', async () => {
    // Each first call takes a lease of 30 (30% of 100) and spends 10 of it.
    expect((await enforce(agents.offline)).body).toMatchObject({ decision: 'allow', policy: POLICY });
    expect((await enforce(agents.returner)).body).toMatchObject({ decision: 'allow', policy: POLICY });
    expect(await waitForHealth(sidecar, () => true)).toMatchObject({ budgetLeases: { held: 2, returning: 0 } });

    await gateway.stop();
    const offline: TestResponse[] = [];
    for (let i = 0; i < 5; i++) offline.push(await enforce(agents.offline));
    expect(offline.map((answer) => answer.status)).toEqual([200, 200, 429, 429, 429]);
    expect(offline.slice(0, 2).map((answer) => answer.body.decision)).toEqual(['allow', 'allow']);
    for (const refused of offline.slice(2)) expect(refused.body).toMatchObject({ error: 'budget_exceeded', limit: '100/1h per_agent budget', policy: POLICY });

    gateway = await startGateway();
    // The offline agent's lease was spent whole: the gateway admits the 70 left, 7 calls, and no more.
    expect(await admittedAtGateway(agents.offline, 9)).toEqual([200, 200, 200, 200, 200, 200, 200, 429, 429]);
  }, 180_000);

  it('gives the unspent part of a lease back once its term ends and the gateway takes it', async () => {
    await eventually(async () => (await waitForHealth(sidecar, () => true)).budgetLeases !== undefined && ((await waitForHealth(sidecar, () => true)).budgetLeases as { held: number; returning: number }).held === 0, 60_000, 'leases returned');
    await eventually(async () => ((await waitForHealth(sidecar, () => true)).budgetLeases as { returning: number }).returning === 0, 30_000, 'returns taken');
    // 10 of its 30 were spent: 90 are left at the gateway, 9 calls.
    expect(await admittedAtGateway(agents.returner, 11)).toEqual([...Array(9).fill(200), 429, 429]);
  }, 120_000);

  it('records every edge decision, those made offline too, with what each reserved or which budget refused it', async () => {
    await eventually(async () => {
      const fleet = await admin<{ sidecars: Array<{ id: string; gaps: unknown[]; unforwarded: number }> }>('GET', '/admin/sidecars');
      const edge = fleet.body.sidecars.find((entry) => entry.id === 'sc_lease-edge');
      return edge !== undefined && edge.gaps.length === 0 && edge.unforwarded === 0;
    }, 60_000, 'edge audit forwarded');
    await eventually(async () => {
      const page = await admin<{ entries: unknown[] }>('GET', `/admin/audit?source=sidecar&agentId=${agents.offline.id}&limit=100`);
      return page.body.entries.length >= 6;
    }, 30_000, 'edge entries in the trail');
    const page = await admin<{ entries: Array<{ decision: string; details: Record<string, unknown> | null }> }>('GET', `/admin/audit?source=sidecar&agentId=${agents.offline.id}&limit=100`);
    const decisions = page.body.entries.map((entry) => entry.decision).sort();
    expect(decisions).toEqual(['allow', 'allow', 'allow', 'deny', 'deny', 'deny']);
    for (const entry of page.body.entries.filter((each) => each.decision === 'allow')) expect(entry.details).toMatchObject({ reserved: 10 });
    for (const entry of page.body.entries.filter((each) => each.decision === 'deny')) expect(entry.details).toMatchObject({ budget: { limit: '100/1h per_agent budget' } });
  }, 120_000);
});

describe('sessions at the edge', () => {
  const atEdge = (action: string, sessionId: string) => call(sidecar.url, 'POST', '/enforce', { bearer: agents.browser.token, body: { agentId: agents.browser.id, action, resource: action.split(':')[1], sessionId } });
  const atGateway = (action: string, sessionId: string) => call(gateway.url, 'POST', '/v1/check', { body: { agentId: agents.browser.id, plugin: 'Tools', function: 'Call', action, sessionId }, headers: { 'x-api-key': apiKey } });

  it('reach the gateway with the audit: its trail names each session, and its own decisions see the labels added at the edge', async () => {
    expect((await atEdge('read:customers/1', 'edge-s1')).body.decision).toBe('allow');
    expect((await atEdge('read:web/page', 'edge-s1')).body.decision).toBe('allow');
    // The session's private_data and the agent's untrusted_content were both added at the edge.
    await eventually(async () => (await atGateway('write:mail/send', 'edge-s1')).body.decision === 'deny', 30_000, 'the gateway sees the edge session');
    // The agent label holds in every session of the agent, at the gateway as at the edge.
    expect((await atGateway('read:customers/2', 'gw-s2')).body.decision).toBe('allow');
    expect((await atGateway('write:mail/send', 'gw-s2')).body).toMatchObject({ decision: 'deny', policy: 'exfiltration' });
    const page = await admin<{ entries: Array<{ action: string; details: { session?: Record<string, unknown> } | null }> }>('GET', `/admin/audit?source=sidecar&agentId=${agents.browser.id}&limit=10`);
    const web = page.body.entries.find((entry) => entry.action === 'read:web/page')!;
    expect(web.details?.session).toEqual({ id: 'edge-s1', labels: ['private_data'], agentLabels: [], labelsAdded: ['untrusted_content'] });
  }, 60_000);
});

describe('the lease API', () => {
  it('refuses a key outside the organization, a negative amount, an unknown budget, and a return by another credential', async () => {
    const key = `bg:org_default:${POLICY}:0:0:per_agent:lease-api-agent`;
    const taken = await admin<{ leaseId: string; granted: number }>('POST', '/api/v1/budget-leases', { key, least: 10 });
    expect(taken.status).toBe(200);
    expect(taken.body.granted).toBe(30);
    const token = await admin<{ token: string }>('POST', '/admin/sidecar-tokens', { name: 'another-edge' });
    const stolen = await admin('POST', '/api/v1/budget-leases/return', { key, leaseId: taken.body.leaseId, spent: 0 }, token.body.token);
    expect(stolen.status).toBe(404);
    const unknown = await admin('POST', '/api/v1/budget-leases', { key: `bg:org_other:${POLICY}:0:0:per_agent:x`, least: 1 }, token.body.token);
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ error: 'invalid_request', message: 'key must be a budget of the organization' });
    const negative = await admin('POST', '/api/v1/budget-leases', { key, least: -1 });
    expect(negative.status).toBe(400);
    expect(JSON.stringify(negative.body)).toContain('least must not be negative');
    const notABudget = await admin('POST', '/api/v1/budget-leases', { key: 'bg:org_default:no-such-policy:0:0:per_agent:x', least: 1 });
    expect(notABudget.status).toBe(404);
    const returned = await admin('POST', '/api/v1/budget-leases/return', { key, leaseId: taken.body.leaseId, spent: 0 });
    expect(returned.body).toEqual({ returned: true });
  });
});
