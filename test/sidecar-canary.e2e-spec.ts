import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { apiKeyMetadata, evaluate, PdpClient, pdpClient, struct } from './support/pdp-client';
import { eventually, freePort, GATEWAY_MAIN, launch, ServiceProcess, SIDECAR_MAIN, waitFor } from './support/processes';
import { testDatabaseKind } from './support/test-gateway';

/**
 * Canary rollouts at the edge (docs/sidecar.md "Shadow policies and canary rollouts"): the built
 * gateway and sidecar as separate processes. The bundle carries the rollout, so one agent meets
 * the same version at the gateway (gRPC Evaluate, as the SDKs call it) and at the sidecar; the
 * sidecar's decisions count in the gateway's comparison, which rolls the canary back on them
 * alone; every step reaches a Subscribe stream at once and the sidecar at its next sync.
 */

const ADMIN_TOKEN = 'sidecar-canary-admin-token-0123456789';
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sidecar-canary-'));
const YAML = { 'content-type': 'application/yaml' };

function refunds(limit: number): string {
  return `name: refunds
match: { action: "read:refunds*" }
rules:
  - name: large-refunds
    condition: args.amount > ${limit}
    action: deny
    reason: Refunds over ${limit} are refused
`;
}

/** docs/policies.md "Canary rollouts": SHA-256 of `<rollout id>\n<agent id>`, first 32 bits, modulo 100, below the share. */
function inCanary(rollout: string, agentId: string, share: number): boolean {
  return createHash('sha256').update(`${rollout}\n${agentId}`).digest().readUInt32BE(0) % 100 < share;
}

interface Agent {
  id: string;
  token: string;
}

interface CanaryView {
  id: string;
  state: string;
  endedBy: string | null;
  canary: { decisions: number; denyRate: number };
  stable: { decisions: number; denyRate: number };
}

let database: OwnDatabase | undefined;
let gateway: ServiceProcess;
let sidecar: ServiceProcess;
let grpcPort: number;
let client: PdpClient;
let apiKey: string;
const agents: Agent[] = [];
const events: Array<Record<string, unknown>> = [];
let subscription: ReturnType<PdpClient['Subscribe']> | undefined;

const admin = <T = Record<string, unknown>>(method: string, route: string, body?: unknown, headers?: Record<string, string>) => call<T>(gateway.url, method, route, { adminToken: ADMIN_TOKEN, body, headers });

beforeAll(async () => {
  if (testDatabaseKind() === 'postgres') database = await ownDatabase();
  grpcPort = await freePort();
  const env: Record<string, string> = {
    ADMIN_TOKEN,
    PUBLIC_URL: 'http://gateway.canary.test',
    PDP_GRPC_PORT: String(grpcPort),
    POLICIES_FILE: '/dev/null',
    SIGNING_KEY_FILE: path.join(scratch, 'signing-key.pem'),
    CANARY_CHECK_INTERVAL: '1s',
    AUDIT_FLUSH_MS: '10',
    LOG_LEVEL: 'warn',
    ...(database ? { DATABASE_URL: database.url } : { DATA_DIR: path.join(scratch, 'data') }),
  };
  gateway = launch(GATEWAY_MAIN, await freePort(), env);
  await waitFor(gateway, '/health', (status) => status === 200, 90_000);
  expect((await admin('PUT', '/admin/policies/refunds', refunds(1000), YAML)).status).toBe(201);
  for (let i = 0; i < 12; i++) {
    const created = await admin<Agent>('POST', '/admin/agents', { name: `edge-bot-${i}` });
    agents.push({ id: created.body.id, token: created.body.token });
  }
  apiKey = (await admin<{ key: string }>('POST', '/admin/api-keys', { name: 'canary sdk' })).body.key;
  client = pdpClient(grpcPort);
  const version = (await admin<{ version: number }>('GET', '/admin/policies')).body.version;
  subscription = client.Subscribe({ sinceVersion: version }, apiKeyMetadata(apiKey));
  subscription.on('data', (event: Record<string, unknown>) => events.push(event));
  subscription.on('error', () => undefined);
  sidecar = launch(SIDECAR_MAIN, await freePort(), {
    GATEWAY_URL: gateway.url,
    ADMIN_TOKEN,
    CACHE_DIR: path.join(scratch, 'cache'),
    BUNDLE_SYNC_INTERVAL: '1',
    AUDIT_FORWARD_INTERVAL_MS: '100',
    SIDECAR_ID: 'sc_canary-edge',
    LOG_LEVEL: 'warn',
  });
  await waitFor(sidecar, '/health', (status, body) => status === 200 && (body.cachedAgents as number) >= agents.length, 60_000);
}, 240_000);

afterAll(async () => {
  subscription?.cancel();
  client?.close();
  await sidecar?.kill();
  await gateway?.kill();
  await database?.dispose();
  fs.rmSync(scratch, { recursive: true, force: true });
}, 60_000);

async function atSidecar(agent: Agent, amount: number): Promise<string> {
  const answer = await call<{ decision: string }>(sidecar.url, 'POST', '/enforce', { bearer: agent.token, body: { agentId: agent.id, action: 'read:refunds', resource: 'refunds', context: { args: { amount } } } });
  return answer.body.decision;
}

async function atGateway(agent: Agent, amount: number): Promise<string> {
  const answer = await evaluate(client, apiKey, { agentId: agent.id, action: 'read:refunds', resource: 'refunds', args: struct({ amount }) });
  return answer.decision === 'DECISION_ALLOW' ? 'allow' : 'deny';
}

async function startCanary(body: Record<string, unknown>): Promise<CanaryView> {
  const started = await admin<CanaryView>('POST', '/admin/canaries', { policy: 'refunds', source: refunds(100), share: 50, ...body });
  expect(started.status).toBe(201);
  return started.body;
}

async function eventOf(kind: string): Promise<Record<string, unknown>> {
  await eventually(async () => events.some((event) => event.kind === kind), 10_000, `a ${kind} event on the Subscribe stream`);
  return events.find((event) => event.kind === kind)!;
}

describe('canary rollouts at the edge', () => {
  it('decide one agent on the same version at the gateway (gRPC) and at the sidecar, and reach Subscribe at once', async () => {
    const canary = await startCanary({ minDecisions: 1_000_000 });
    expect(await eventOf('canary_started')).toMatchObject({ changed: ['refunds'] });
    const cohorts = agents.map((agent) => inCanary(canary.id, agent.id, 50));
    expect(cohorts).toContain(true);
    expect(cohorts).toContain(false);
    const member = agents[cohorts.indexOf(true)];
    await eventually(async () => (await atSidecar(member, 500)) === 'deny', 15_000, 'the rollout in the sidecar’s bundle');
    for (const [i, agent] of agents.entries()) {
      const expected = cohorts[i] ? 'deny' : 'allow';
      expect({ agent: agent.id, gateway: await atGateway(agent, 500), sidecar: await atSidecar(agent, 500) }).toEqual({ agent: agent.id, gateway: expected, sidecar: expected });
    }
    // The sidecar's entries reach the gateway with their cohort.
    await eventually(async () => {
      const entries = (await admin<{ entries: Array<{ source: string; details: { canary?: { rollout: string } } | null }> }>('GET', '/admin/audit?limit=1000&action=read:refunds')).body.entries;
      return entries.filter((entry) => entry.source === 'sidecar' && entry.details?.canary?.rollout === canary.id).length >= agents.length;
    }, 20_000, 'the sidecar’s canary entries at the gateway');
    expect((await admin('POST', `/admin/canaries/${canary.id}/abort`)).status).toBe(200);
    expect(await eventOf('canary_ended')).toMatchObject({ changed: ['refunds'] });
    await eventually(async () => (await atSidecar(member, 500)) === 'allow', 15_000, 'the abort at the sidecar’s next sync');
  });

  it('roll back on the sidecar’s decisions alone, and the rollback reaches the sidecar at its next sync', async () => {
    events.length = 0;
    const canary = await startCanary({ minDecisions: 5, margin: 20 });
    const member = agents.find((agent) => inCanary(canary.id, agent.id, 50))!;
    await eventually(async () => (await atSidecar(member, 500)) === 'deny', 15_000, 'the rollout in the sidecar’s bundle');
    let state = 'running';
    for (let round = 0; state === 'running' && round < 60; round++) {
      for (const agent of agents) await atSidecar(agent, 500);
      state = (await admin<CanaryView>('GET', `/admin/canaries/${canary.id}`)).body.state;
      if (state === 'running') await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(state).toBe('rolled_back');
    const ended = (await admin<CanaryView>('GET', `/admin/canaries/${canary.id}`)).body;
    expect(ended.endedBy).toBe('gateway');
    expect(ended.canary.decisions).toBeGreaterThanOrEqual(5);
    expect(ended.stable.decisions).toBeGreaterThanOrEqual(5);
    expect(ended.canary.denyRate).toBe(100);
    expect(await eventOf('canary_ended')).toMatchObject({ changed: ['refunds'] });
    await eventually(async () => (await atSidecar(member, 500)) === 'allow', 15_000, 'the rollback at the sidecar’s next sync');
    expect(await atGateway(member, 500)).toBe('allow');
  });
});
