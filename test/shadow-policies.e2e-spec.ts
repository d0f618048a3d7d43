import { execFile } from 'node:child_process';
import path from 'node:path';
import { call } from './support/http-client';
import { eventually } from './support/processes';
import { auditEntries, createAgent, proxy } from './support/org-fixtures';
import { createOrganization, startGateway, testEnv, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/** Shadow policies (mode: shadow): evaluated and recorded on every decision, never enforced; analytics; promotion. */

const CLI = path.resolve(__dirname, '../dist/src/cli/main.js');
const YAML = { 'content-type': 'application/yaml' };

const SHADOW = `name: reports-need-trust
mode: shadow
match: { action: "read:reports*" }
rules:
  - name: untrusted-reports
    condition: agent.trust_tier < trusted
    action: deny
    reason: Reports need a trusted agent
`;

const ENFORCED = `name: no-secrets
match: { action: "read:secrets*" }
rules:
  - name: secrets
    condition: "true"
    action: deny
    reason: No secrets
`;

interface ShadowStat {
  name: string;
  evaluated: number;
  wouldDeny: number;
  wouldDenyRate: number;
  wouldFlip: number;
  topAgents: Array<{ key: string; name?: string; count: number }>;
  topActions: Array<{ key: string; count: number }>;
}

let gateway: TestGateway;
let upstream: TestUpstream;

beforeAll(async () => {
  upstream = await startUpstream();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

async function put(org: TestOrganization, name: string, source: string): Promise<void> {
  const response = await call(gateway.url, 'PUT', `/admin/policies/${name}`, { adminToken: org.adminToken, body: source, headers: YAML });
  expect(response.status).toBe(201);
}

function ags(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...testEnv() }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

describe('shadow policies', () => {
  let org: TestOrganization;
  let agent: { id: string; token: string };
  let trusted: { id: string; token: string };

  beforeAll(async () => {
    org = await createOrganization(gateway);
    agent = await createAgent(gateway, org, { name: 'report-bot', trustTier: 'verified' });
    trusted = await createAgent(gateway, org, { name: 'analyst', trustTier: 'trusted' });
    await put(org, 'no-secrets', ENFORCED);
    await put(org, 'reports-need-trust', SHADOW);
  });

  it('are never enforced: what they would deny is let through, and the audit entry says what they would have decided', async () => {
    for (let i = 0; i < 3; i++) expect((await proxy(gateway, agent.token, 'GET', '/reports/q3')).status).toBe(200);
    expect((await proxy(gateway, trusted.token, 'GET', '/reports/q3')).status).toBe(200);
    expect((await proxy(gateway, agent.token, 'GET', '/orders/1')).status).toBe(200);
    expect((await proxy(gateway, agent.token, 'GET', '/secrets/key')).status).toBe(403);

    const entries = await auditEntries(gateway, org, 'action=read:', 6);
    const reports = entries.filter((entry) => entry.action === 'read:reports/q3');
    expect(reports).toHaveLength(4);
    const byAgent = reports.filter((entry) => entry.agentId === agent.id);
    for (const entry of byAgent) {
      expect(entry).toMatchObject({ decision: 'allow', status: 200 });
      expect(entry.details?.shadow).toEqual([{ policy: 'reports-need-trust', decision: 'deny', rule: 'untrusted-reports', reason: 'Reports need a trusted agent' }]);
    }
    const byTrusted = reports.find((entry) => entry.agentId === trusted.id);
    expect(byTrusted?.details?.shadow).toEqual([{ policy: 'reports-need-trust', decision: 'allow', rule: null, reason: 'allowed' }]);
    // Where the shadow policy does not apply, the entry carries no shadow result.
    const orders = entries.find((entry) => entry.action === 'read:orders/1');
    expect(orders?.details ?? null).toBeNull();
    const secrets = entries.find((entry) => entry.action === 'read:secrets/key');
    expect(secrets).toMatchObject({ decision: 'deny', policyName: 'no-secrets' });
  });

  it('show in analytics: would-deny rate, and the agents and actions they would hit', async () => {
    const response = await call<{ policies: ShadowStat[] }>(gateway.url, 'GET', '/admin/analytics/shadow?period=24h', { adminToken: org.adminToken });
    expect(response.status).toBe(200);
    expect(response.body.policies).toEqual([
      {
        name: 'reports-need-trust',
        evaluated: 4,
        wouldDeny: 3,
        wouldDenyRate: 75,
        wouldFlip: 3,
        topAgents: [{ key: agent.id, name: 'report-bot', count: 3 }],
        topActions: [{ key: 'read:reports/q3', count: 3 }],
      },
    ]);
  });

  it('are listed with mode shadow, and `ags policy promote` puts one in force', async () => {
    const listed = await call<{ policies: Array<{ name: string; mode: string }> }>(gateway.url, 'GET', '/admin/policies', { adminToken: org.adminToken });
    expect(listed.body.policies.map(({ name, mode }) => ({ name, mode }))).toEqual([
      { name: 'no-secrets', mode: 'enforce' },
      { name: 'reports-need-trust', mode: 'shadow' },
    ]);
    expect((await proxy(gateway, agent.token, 'GET', '/reports/q3')).status).toBe(200);
    const promoted = await ags('policy', 'promote', 'reports-need-trust', '--org', org.id);
    expect(promoted.stderr).toBe('');
    expect(promoted.code).toBe(0);
    expect(promoted.stdout).toContain('mode: enforce');
    const stored = await call<{ mode: string; source: string }>(gateway.url, 'GET', '/admin/policies/reports-need-trust', { adminToken: org.adminToken });
    expect(stored.body.mode).toBe('enforce');
    expect(stored.body.source).not.toContain('shadow');
    const [change] = await auditEntries(gateway, org, 'action=admin:policy.update', 1);
    expect(change.details).toMatchObject({ policy: 'reports-need-trust' });
    // The CLI's change reaches the running gateway through the database's change notification.
    await eventually(async () => (await proxy(gateway, agent.token, 'GET', '/reports/q3')).status === 403, 10_000, 'the promoted policy in force at the gateway');
  });

  it('in force once promoted through the API: what it only recorded is now denied', async () => {
    await put(org, 'no-exports', SHADOW.replace('reports-need-trust', 'no-exports').replace('read:reports*', 'read:exports*'));
    expect((await proxy(gateway, agent.token, 'GET', '/exports/all')).status).toBe(200);
    const promoted = await call<{ mode: string }>(gateway.url, 'POST', '/admin/policies/no-exports/promote', { adminToken: org.adminToken });
    expect(promoted.status).toBe(200);
    expect(promoted.body.mode).toBe('enforce');
    expect((await proxy(gateway, agent.token, 'GET', '/exports/all')).status).toBe(403);
  });

  it('refuse promoting a policy already in force (409) and an unknown one (404)', async () => {
    const again = await call<{ error: string }>(gateway.url, 'POST', '/admin/policies/no-secrets/promote', { adminToken: org.adminToken });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('conflict');
    const missing = await call(gateway.url, 'POST', '/admin/policies/nope/promote', { adminToken: org.adminToken });
    expect(missing.status).toBe(404);
  });

  it('refuse a mode that is neither enforce nor shadow, with its line and column', async () => {
    const response = await call<{ errors: Array<{ line: number; column: number; message: string }> }>(gateway.url, 'PUT', '/admin/policies/odd', {
      adminToken: org.adminToken,
      body: 'name: odd\nmode: canary\nrules: []\n',
      headers: YAML,
    });
    expect(response.status).toBe(400);
    expect(response.body.errors[0]).toMatchObject({ line: 2, column: 7, message: "'mode' must be 'enforce' or 'shadow'" });
  });
});
