import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { eventually, freePort, GATEWAY_MAIN, launch, ServiceProcess, SIDECAR_MAIN, waitFor } from './support/processes';
import { testDatabaseKind } from './support/test-gateway';

/**
 * Canary rollouts to labelled sidecars (docs/policies.md "Canary rollouts"): the built gateway and
 * two sidecars as processes, one started with SIDECAR_LABELS=canary=true. The rollout's new
 * version is only in the bundle of the labelled sidecar (every agent decides on it there); the
 * other sidecar and the gateway decide on the version in force and count as the stable cohort.
 * The forwarded entries carry their cohort, and the gateway's comparison rolls the canary back
 * on them; the rollback reaches the labelled sidecar at its next sync.
 */

const ADMIN_TOKEN = 'sidecar-canary-labels-admin-token-0123';
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-canary-labels-'));
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

interface Agent {
  id: string;
  token: string;
}

interface CanaryView {
  id: string;
  state: string;
  share: number | null;
  sidecarLabels: Record<string, string> | null;
  endedBy: string | null;
  outcome: string | null;
  canary: { decisions: number; denyRate: number };
  stable: { decisions: number; denyRate: number };
}

let database: OwnDatabase | undefined;
let gateway: ServiceProcess;
let labelled: ServiceProcess;
let plain: ServiceProcess;
const agents: Agent[] = [];

const admin = <T = Record<string, unknown>>(method: string, route: string, body?: unknown, headers?: Record<string, string>) => call<T>(gateway.url, method, route, { adminToken: ADMIN_TOKEN, body, headers });

function sidecarEnv(name: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    GATEWAY_URL: gateway.url,
    ADMIN_TOKEN,
    CACHE_DIR: path.join(scratch, name),
    BUNDLE_SYNC_INTERVAL: '1',
    AUDIT_FORWARD_INTERVAL_MS: '100',
    SIDECAR_ID: name,
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

beforeAll(async () => {
  if (testDatabaseKind() === 'postgres') database = await ownDatabase();
  gateway = launch(GATEWAY_MAIN, await freePort(), {
    ADMIN_TOKEN,
    PUBLIC_URL: 'http://gateway.canary-labels.test',
    POLICIES_FILE: '/dev/null',
    SIGNING_KEY_FILE: path.join(scratch, 'signing-key.pem'),
    CANARY_CHECK_INTERVAL: '1s',
    AUDIT_FLUSH_MS: '10',
    LOG_LEVEL: 'warn',
    ...(database ? { DATABASE_URL: database.url } : { DATA_DIR: path.join(scratch, 'data') }),
  });
  await waitFor(gateway, '/health', (status) => status === 200, 90_000);
  expect((await admin('PUT', '/admin/policies/refunds', refunds(1000), YAML)).status).toBe(201);
  for (let i = 0; i < 4; i++) {
    const created = await admin<Agent>('POST', '/admin/agents', { name: `labelled-bot-${i}` });
    agents.push({ id: created.body.id, token: created.body.token });
  }
  labelled = launch(SIDECAR_MAIN, await freePort(), sidecarEnv('sc_labelled', { SIDECAR_LABELS: 'canary=true,region=eu' }));
  plain = launch(SIDECAR_MAIN, await freePort(), sidecarEnv('sc_plain'));
  for (const sidecar of [labelled, plain]) await waitFor(sidecar, '/health', (status, body) => status === 200 && (body.cachedAgents as number) >= agents.length, 60_000);
}, 240_000);

afterAll(async () => {
  await labelled?.kill();
  await plain?.kill();
  await gateway?.kill();
  await database?.dispose();
  fs.rmSync(scratch, { recursive: true, force: true });
}, 60_000);

async function at(sidecar: ServiceProcess, agent: Agent, amount: number): Promise<string> {
  const answer = await call<{ decision: string }>(sidecar.url, 'POST', '/enforce', { bearer: agent.token, body: { agentId: agent.id, action: 'read:refunds', resource: 'refunds', context: { args: { amount } } } });
  return answer.body.decision;
}

async function sidecarEntries(rollout: string): Promise<Array<{ details: { canary?: { rollout: string; cohort: string } } | null }>> {
  const entries = (await admin<{ entries: Array<{ source: string; details: { canary?: { rollout: string; cohort: string } } | null }> }>('GET', '/admin/audit?limit=1000&action=read:refunds')).body.entries;
  return entries.filter((entry) => entry.source === 'sidecar' && entry.details?.canary?.rollout === rollout);
}

describe('canary rollouts to labelled sidecars', () => {
  it('refuse a selector that is empty, malformed, or given with a share (400), and a malformed X-Sidecar-Labels', async () => {
    const base = { policy: 'refunds', source: refunds(100) };
    for (const body of [{ ...base }, { ...base, sidecarLabels: {} }, { ...base, share: 10, sidecarLabels: { canary: 'true' } }, { ...base, sidecarLabels: { 'bad label!': 'x' } }, { ...base, sidecarLabels: { canary: 7 } }]) {
      const answer = await admin<{ error: string; message: string }>('POST', '/admin/canaries', body);
      expect({ body, status: answer.status, error: answer.body.error }).toEqual({ body, status: 400, error: 'invalid_request' });
    }
    const badHeader = await admin<{ message: string }>('GET', '/api/v1/bundle', undefined, { 'X-Sidecar-Labels': 'canary' });
    expect(badHeader.status).toBe(400);
    expect(badHeader.body.message).toMatch(/X-Sidecar-Labels/);
  });

  it('put the new version only in the labelled sidecar’s bundle, and list the sidecars’ labels', async () => {
    const started = await admin<CanaryView>('POST', '/admin/canaries', { policy: 'refunds', source: refunds(100), sidecarLabels: { canary: 'true' }, minDecisions: 1_000_000 });
    expect(started.status).toBe(201);
    expect(started.body).toMatchObject({ share: null, sidecarLabels: { canary: 'true' } });
    const rollout = started.body.id;
    await eventually(async () => (await at(labelled, agents[0], 500)) === 'deny', 15_000, 'the new version at the labelled sidecar');
    for (const agent of agents) {
      expect({ agent: agent.id, labelled: await at(labelled, agent, 500), plain: await at(plain, agent, 500) }).toEqual({ agent: agent.id, labelled: 'deny', plain: 'allow' });
    }
    // The bundles as the two sidecars fetch them: the definition travels only to a matching one.
    const selected = await admin<{ canary?: { id: string; definition?: unknown } }>('GET', '/api/v1/bundle', undefined, { 'X-Sidecar-Labels': 'region=eu,canary=true' });
    expect(selected.body.canary).toMatchObject({ id: rollout, sidecarLabels: { canary: 'true' }, definition: { name: 'refunds' } });
    const other = await admin<{ canary?: { id: string; definition?: unknown } }>('GET', '/api/v1/bundle', undefined, { 'X-Sidecar-Labels': 'canary=false' });
    expect(other.body.canary).toEqual({ id: rollout, policy: 'refunds', sidecarLabels: { canary: 'true' } });
    const unlabelled = await admin<{ canary?: { definition?: unknown } }>('GET', '/api/v1/bundle');
    expect(unlabelled.body.canary?.definition).toBeUndefined();
    const sidecars = (await admin<{ sidecars: Array<{ id: string; labels: Record<string, string> }> }>('GET', '/admin/sidecars')).body.sidecars;
    expect(Object.fromEntries(sidecars.map((sidecar) => [sidecar.id, sidecar.labels]))).toMatchObject({ sc_labelled: { canary: 'true', region: 'eu' }, sc_plain: {} });
    // Both sidecars' entries reach the gateway with their cohort.
    await eventually(async () => {
      const entries = await sidecarEntries(rollout);
      return entries.filter((entry) => entry.details!.canary!.cohort === 'canary').length >= agents.length && entries.filter((entry) => entry.details!.canary!.cohort === 'stable').length >= agents.length;
    }, 30_000, 'both cohorts’ entries at the gateway');
    expect((await admin('POST', `/admin/canaries/${rollout}/abort`)).status).toBe(200);
    await eventually(async () => (await at(labelled, agents[0], 500)) === 'allow', 15_000, 'the abort at the labelled sidecar’s next sync');
  });

  it('roll back when the labelled sidecar denies more than the rest, and the rollback reaches it at its next sync', async () => {
    const started = await admin<CanaryView>('POST', '/admin/canaries', { policy: 'refunds', source: refunds(100), sidecarLabels: { canary: 'true' }, minDecisions: 8, margin: 20 });
    expect(started.status).toBe(201);
    const rollout = started.body.id;
    await eventually(async () => (await at(labelled, agents[0], 500)) === 'deny', 15_000, 'the new version at the labelled sidecar');
    let state = 'running';
    for (let round = 0; state === 'running' && round < 60; round++) {
      for (const agent of agents) {
        await at(labelled, agent, 500);
        await at(plain, agent, 500);
      }
      state = (await admin<CanaryView>('GET', `/admin/canaries/${rollout}`)).body.state;
      if (state === 'running') await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(state).toBe('rolled_back');
    const ended = (await admin<CanaryView>('GET', `/admin/canaries/${rollout}`)).body;
    expect(ended.endedBy).toBe('gateway');
    expect(ended.canary.decisions).toBeGreaterThanOrEqual(8);
    expect(ended.stable.decisions).toBeGreaterThanOrEqual(8);
    expect(ended.canary.denyRate).toBe(100);
    expect(ended.stable.denyRate).toBe(0);
    await eventually(async () => (await at(labelled, agents[0], 500)) === 'allow', 15_000, 'the rollback at the labelled sidecar’s next sync');
  });
});
