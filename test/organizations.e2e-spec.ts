import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { OrganizationsService } from '../src/gateway/organizations/organizations.service';
import { call, TestResponse } from './support/http-client';
import { createOrganization, startGateway, testEnv, TestGateway, TestOrganization } from './support/test-gateway';
import { ownDatabase } from './support/own-database';

/** GET /admin/organization, tenant isolation, and the bootstrap organization's admin token. */


interface OrganizationBody {
  id: string;
  name: string;
  plan: string;
  limits: Record<string, number>;
  usage: { agents: number; policies: number; policyChecksThisMonth: number; period: string };
  billingEmail: string | null;
  customerId: string | null;
}

interface AgentBody {
  id: string;
  name: string;
}

/** The plans' limits (`GET /billing/plans`, docs/billing.md; -1 = unlimited). */
const PLAN_LIMITS = {
  free: { agents: 2, policyChecksPerMonth: 1000, policies: 3, auditRetentionDays: 7, teamMembers: 1 },
  starter: { agents: 10, policyChecksPerMonth: 25000, policies: 25, auditRetentionDays: 30, teamMembers: 5 },
  professional: { agents: 50, policyChecksPerMonth: 250000, policies: -1, auditRetentionDays: 90, teamMembers: 25 },
  enterprise: { agents: -1, policyChecksPerMonth: -1, policies: -1, auditRetentionDays: -1, teamMembers: -1 },
} as const;

const GATEWAY_MAIN = path.resolve(__dirname, '../dist/src/main.js');

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startGateway();
});
afterAll(() => gateway.close());

function organizationOf(token: string, url = gateway.url): Promise<TestResponse<OrganizationBody>> {
  return call<OrganizationBody>(url, 'GET', '/admin/organization', { adminToken: token });
}

async function createAgent(token: string, name: string): Promise<AgentBody> {
  const response = await call<AgentBody>(gateway.url, 'POST', '/admin/agents', { adminToken: token, body: { name } });
  expect(response.status).toBe(201);
  return response.body;
}


async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Starts the built gateway (`npm run start:gateway`) and waits until it listens; fails with its stderr if it exits. */
async function spawnGateway(env: Record<string, string>): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawn(process.execPath, [GATEWAY_MAIN], {
    env: { PATH: process.env.PATH ?? '', ...testEnv({ ...env, PORT: String(port), LOG_LEVEL: 'info' }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 30_000;
  while (!stdout.includes('gateway listening')) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`gateway did not start (exit code ${child.exitCode}): ${stderr.trim()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

describe('GET /admin/organization', () => {
  it.each(Object.entries(PLAN_LIMITS))('reports the %s plan with its limits', async (plan, limits) => {
    const org = await createOrganization(gateway, plan as keyof typeof PLAN_LIMITS, `Org on ${plan}`);
    const response = await organizationOf(org.adminToken);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      id: org.id,
      name: `Org on ${plan}`,
      plan,
      limits,
      usage: expect.objectContaining({ agents: 0, policies: 0 }),
      billingEmail: null,
      customerId: null,
    });
  });

  it('reports the billing email the organization was created with', async () => {
    const { organization, adminToken } = await gateway.app.get(OrganizationsService).create({ name: 'Billed org', plan: 'starter', billingEmail: 'billing@example.com' });
    const response = await organizationOf(adminToken);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ id: organization.id, plan: 'starter', billingEmail: 'billing@example.com', customerId: null });
  });

  it('counts active agents only in usage.agents', async () => {
    const org = await createOrganization(gateway, 'starter', 'Usage org');
    const first = await createAgent(org.adminToken, 'u1');
    await createAgent(org.adminToken, 'u2');
    expect((await organizationOf(org.adminToken)).body.usage.agents).toBe(2);

    const revoked = await call(gateway.url, 'DELETE', `/admin/agents/${first.id}`, { adminToken: org.adminToken });
    expect(revoked.status).toBe(200);
    const response = await organizationOf(org.adminToken);
    expect(response.body.usage.agents).toBe(1);
    expect(response.body.usage.period).toBe(new Date().toISOString().slice(0, 7));
  });
});

describe('organization isolation', () => {
  let orgA: TestOrganization;
  let orgB: TestOrganization;
  let agentA: AgentBody;
  let agentB: AgentBody;

  beforeAll(async () => {
    orgA = await createOrganization(gateway, 'enterprise', 'Org A');
    orgB = await createOrganization(gateway, 'enterprise', 'Org B');
    agentA = await createAgent(orgA.adminToken, 'agent-of-a');
    agentB = await createAgent(orgB.adminToken, 'agent-of-b');
  });

  it('lists only the caller’s agents', async () => {
    const listA = await call<{ agents: AgentBody[] }>(gateway.url, 'GET', '/admin/agents?includeRevoked=true', { adminToken: orgA.adminToken });
    const listB = await call<{ agents: AgentBody[] }>(gateway.url, 'GET', '/admin/agents?includeRevoked=true', { adminToken: orgB.adminToken });
    expect(listA.body.agents.map((agent) => agent.id)).toEqual([agentA.id]);
    expect(listB.body.agents.map((agent) => agent.id)).toEqual([agentB.id]);
  });

  it('shows each organization only its own audit entries', async () => {
    const deadline = Date.now() + 5000;
    let entriesA: Array<{ agentId: string | null }> = [];
    while (Date.now() < deadline) {
      const page = await call<{ entries: Array<{ agentId: string | null }> }>(gateway.url, 'GET', '/admin/audit', { adminToken: orgA.adminToken });
      expect(page.status).toBe(200);
      entriesA = page.body.entries;
      if (entriesA.some((entry) => entry.agentId === agentA.id)) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(entriesA.map((entry) => entry.agentId)).toContain(agentA.id);
    expect(entriesA.map((entry) => entry.agentId)).not.toContain(agentB.id);
  });

  it('reports the caller’s own organization', async () => {
    expect((await organizationOf(orgA.adminToken)).body).toMatchObject({ id: orgA.id, name: 'Org A', usage: { agents: 1 } });
    expect((await organizationOf(orgB.adminToken)).body).toMatchObject({ id: orgB.id, name: 'Org B', usage: { agents: 1 } });
  });

  it('requires an admin token', async () => {
    const missing = await call(gateway.url, 'GET', '/admin/organization');
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({ error: 'unauthorized' });
    const wrong = await organizationOf(`${orgA.adminToken}-not`);
    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({ error: 'unauthorized' });
  });
});

describe('the bootstrap organization', () => {
  const tokenX = `bootstrap-x-${randomBytes(12).toString('hex')}`;
  const tokenY = `bootstrap-y-${randomBytes(12).toString('hex')}`;
  let database: { url: string; dispose(): Promise<void> };
  let agentId: string;

  beforeAll(async () => {
    database = await ownDatabase();
  });
  afterAll(() => database.dispose());

  it('takes its admin token from ADMIN_TOKEN, and keeps it across restarts', async () => {
    const first = await startGateway({ DATABASE_URL: database.url, ADMIN_TOKEN: tokenX, DEFAULT_PLAN: 'professional' });
    try {
      const org = await organizationOf(tokenX, first.url);
      expect(org.status).toBe(200);
      expect(org.body).toMatchObject({ id: 'org_default', plan: 'professional', limits: PLAN_LIMITS.professional });
      const created = await call<AgentBody>(first.url, 'POST', '/admin/agents', { adminToken: tokenX, body: { name: 'bootstrap-agent' } });
      expect(created.status).toBe(201);
      agentId = created.body.id;
    } finally {
      await first.close();
    }

    const restarted = await startGateway({ DATABASE_URL: database.url, ADMIN_TOKEN: tokenX });
    try {
      expect((await organizationOf(tokenX, restarted.url)).body.id).toBe('org_default');
    } finally {
      await restarted.close();
    }
  });

  it('replaces it when ADMIN_TOKEN changes: the new token works, the old one is 401', async () => {
    const second = await startGateway({ DATABASE_URL: database.url, ADMIN_TOKEN: tokenY });
    try {
      const withY = await organizationOf(tokenY, second.url);
      expect(withY.status).toBe(200);
      expect(withY.body.id).toBe('org_default');
      const withX = await organizationOf(tokenX, second.url);
      expect(withX.status).toBe(401);
      expect(withX.body).toMatchObject({ error: 'unauthorized' });
      const agent = await call<AgentBody>(second.url, 'GET', `/admin/agents/${agentId}`, { adminToken: tokenY });
      expect(agent.status).toBe(200);
      expect(agent.body.name).toBe('bootstrap-agent');
    } finally {
      await second.close();
    }
  });

  it('accepts an earlier token again when ADMIN_TOKEN is rolled back', async () => {
    // Started as a process: a start that fails must not leave a half-started gateway in this one.
    const rolledBack = await spawnGateway({ DATABASE_URL: database.url, ADMIN_TOKEN: tokenX });
    try {
      expect((await organizationOf(tokenX, rolledBack.url)).status).toBe(200);
      expect((await organizationOf(tokenY, rolledBack.url)).status).toBe(401);
    } finally {
      await rolledBack.stop();
    }
  });
});
