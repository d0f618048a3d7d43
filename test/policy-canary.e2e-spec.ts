import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AlertReceiver, startAlertReceiver } from './support/alert-receivers';
import { call } from './support/http-client';
import { auditEntries, AuditEntryView, createAgent, proxy, TestAgent } from './support/org-fixtures';
import { eventually } from './support/processes';
import { createOrganization, startGateway, testEnv, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * Canary rollouts (docs/policies.md "Canary rollouts"): a new version of a policy decides for a
 * share of the agents, chosen by a stable hash of the agent id; its decisions are audited with
 * their cohort; it is rolled back by itself when it denies more than the rest (counted under
 * paced traffic, not timed), promoted after its window otherwise, and promoted or aborted by
 * hand through the API and the CLI. Every step is a policy version, an audit event and an alert.
 */

const CLI = path.resolve(__dirname, '../dist/src/cli/main.js');
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

interface CohortView {
  decisions: number;
  denied: number;
  denyRate: number;
  approvals: number;
  approvalRate: number;
  errors: number;
  errorRate: number;
}

interface CanaryView {
  id: string;
  policy: string;
  state: string;
  share: number;
  outcome: string | null;
  endedBy: string | null;
  source: string;
  canary: CohortView;
  stable: CohortView;
}

/** The cohort docs/policies.md defines: SHA-256 of `<rollout id>\n<agent id>`, first 32 bits, modulo 100, below the share. */
function inCanary(rollout: string, agentId: string, share: number): boolean {
  return createHash('sha256').update(`${rollout}\n${agentId}`).digest().readUInt32BE(0) % 100 < share;
}

let gateway: TestGateway;
let upstream: TestUpstream;
let webhook: AlertReceiver;

beforeAll(async () => {
  upstream = await startUpstream();
  webhook = await startAlertReceiver();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url, CANARY_CHECK_INTERVAL: '1s', ALERT_WEBHOOK_URL: `${webhook.url}/hook` });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
  await webhook.close();
});

function ags(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...testEnv({ ALERT_WEBHOOK_URL: `${webhook.url}/hook` }) }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

async function putPolicy(org: TestOrganization, source: string): Promise<void> {
  const response = await call(gateway.url, 'PUT', '/admin/policies/refunds', { adminToken: org.adminToken, body: source, headers: YAML });
  expect([200, 201]).toContain(response.status);
}

async function startCanary(org: TestOrganization, body: Record<string, unknown>): Promise<CanaryView> {
  const response = await call<CanaryView>(gateway.url, 'POST', '/admin/canaries', { adminToken: org.adminToken, body: { policy: 'refunds', ...body } });
  expect(response.status).toBe(201);
  expect(response.body.state).toBe('running');
  return response.body;
}

async function canaryOf(org: TestOrganization, id: string): Promise<CanaryView> {
  const response = await call<CanaryView>(gateway.url, 'GET', `/admin/canaries/${id}`, { adminToken: org.adminToken });
  expect(response.status).toBe(200);
  return response.body;
}

async function agentsOf(org: TestOrganization, count: number): Promise<TestAgent[]> {
  const agents: TestAgent[] = [];
  for (let i = 0; i < count; i++) agents.push(await createAgent(gateway, org, { name: `refund-bot-${i}` }));
  return agents;
}

async function refund(agent: TestAgent, amount: number): Promise<number> {
  return (await proxy(gateway, agent.token, 'GET', `/refunds?amount=${amount}`)).status;
}

describe('canary rollouts', () => {
  let org: TestOrganization;
  let agents: TestAgent[];

  beforeAll(async () => {
    org = await createOrganization(gateway);
    agents = await agentsOf(org, 20);
    await putPolicy(org, refunds(1000));
  });

  it('decide each agent on one version, chosen by a stable hash of its id, and audit which cohort decided', async () => {
    const canary = await startCanary(org, { source: refunds(100), share: 50, minDecisions: 1000 });
    const cohorts = agents.map((agent) => inCanary(canary.id, agent.id, 50));
    expect(cohorts).toContain(true);
    expect(cohorts).toContain(false);
    for (let round = 0; round < 3; round++) {
      for (const [i, agent] of agents.entries()) expect(await refund(agent, 500)).toBe(cohorts[i] ? 403 : 200);
    }
    expect((await proxy(gateway, agents[0].token, 'GET', '/orders/1')).status).toBe(200);

    const entries = await auditEntries(gateway, org, 'action=read:', 61);
    const refundEntries = entries.filter((entry) => entry.action === 'read:refunds');
    expect(refundEntries).toHaveLength(60);
    for (const entry of refundEntries) {
      const cohort = inCanary(canary.id, entry.agentId!, 50) ? 'canary' : 'stable';
      expect(entry.details?.canary).toEqual({ rollout: canary.id, policy: 'refunds', cohort });
      expect(entry.decision).toBe(cohort === 'canary' ? 'deny' : 'allow');
    }
    // Where the rolled-out policy applies in neither version, the entry names no cohort.
    expect(entries.find((entry) => entry.action === 'read:orders/1')?.details ?? null).toBeNull();

    const inCohort = cohorts.filter(Boolean).length;
    const live = await canaryOf(org, canary.id);
    expect(live.canary).toMatchObject({ decisions: 3 * inCohort, denied: 3 * inCohort, denyRate: 100 });
    expect(live.stable).toMatchObject({ decisions: 3 * (agents.length - inCohort), denied: 0, denyRate: 0 });

    const aborted = await call<CanaryView>(gateway.url, 'POST', `/admin/canaries/${canary.id}/abort`, { adminToken: org.adminToken });
    expect(aborted.status).toBe(200);
    expect(aborted.body).toMatchObject({ state: 'aborted', outcome: 'aborted by hand' });
    for (const agent of agents) expect(await refund(agent, 500)).toBe(200);

    const history = await call<{ versions: Array<{ kind: string; policy: string }> }>(gateway.url, 'GET', '/admin/policies/versions', { adminToken: org.adminToken });
    expect(history.body.versions.slice(0, 2).map(({ kind, policy }) => ({ kind, policy }))).toEqual([
      { kind: 'canary_ended', policy: 'refunds' },
      { kind: 'canary_started', policy: 'refunds' },
    ]);
    const [event] = await auditEntries(gateway, org, 'action=admin:policy.canary.abort', 1);
    expect(event.details).toMatchObject({ rollout: canary.id, policy: 'refunds' });
  });

  it('roll back by themselves once the canary denies more than the rest by the margin: counted under paced traffic', async () => {
    const canary = await startCanary(org, { source: refunds(100), share: 50, minDecisions: 10, margin: 20 });
    const cohorts = agents.map((agent) => inCanary(canary.id, agent.id, 50));
    let state = 'running';
    let rounds = 0;
    // Each round every agent asks once; the comparison (every 1 s) needs 10 decisions per cohort.
    while (state === 'running' && rounds < 60) {
      for (const agent of agents) await refund(agent, 500);
      rounds++;
      state = (await canaryOf(org, canary.id)).state;
      if (state === 'running') await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(state).toBe('rolled_back');
    const ended = await canaryOf(org, canary.id);
    expect(ended.endedBy).toBe('gateway');
    expect(ended.outcome).toMatch(/^rolled back: deny rate 100% in the canary \(\d+ decisions\) against 0% in the rest \(\d+\), margin 20 points$/);
    expect(ended.canary.decisions).toBeGreaterThanOrEqual(10);
    expect(ended.stable.decisions).toBeGreaterThanOrEqual(10);
    expect(ended.canary.denyRate).toBe(100);

    // Rolled back: every agent decides on the version in force again, the canary's agents too.
    for (const [i, agent] of agents.entries()) if (cohorts[i]) expect(await refund(agent, 500)).toBe(200);

    const [event] = await auditEntries(gateway, org, 'action=admin:policy.canary.rollback', 1);
    expect(event.details).toMatchObject({ rollout: canary.id, policy: 'refunds' });
    const alerts = await webhook.waitFor(1, (request) => request.json.trigger === 'policy_canary' && String(request.json.title).includes(`rolled back (${canary.id})`));
    expect(alerts[0].json).toMatchObject({ severity: 'warning', trigger: 'policy_canary' });
    expect(String(alerts[0].json.message)).toContain('deny rate 100% in the canary');
  });

  it('are promoted by themselves after their window when the canary denies no more than the rest', async () => {
    const canary = await startCanary(org, { source: refunds(2000), share: 50, window: '3s', minDecisions: 1 });
    for (const agent of agents.slice(0, 6)) expect(await refund(agent, 1500)).toBe(inCanary(canary.id, agent.id, 50) ? 200 : 403);
    await eventually(async () => (await canaryOf(org, canary.id)).state === 'promoted', 20_000, 'promotion after the window');
    const ended = await canaryOf(org, canary.id);
    expect(ended.outcome).toMatch(/^promoted after its window: deny rate/);
    const policy = await call<{ source: string; origin: string }>(gateway.url, 'GET', '/admin/policies/refunds', { adminToken: org.adminToken });
    expect(policy.body.source).toBe(refunds(2000));
    for (const agent of agents) expect(await refund(agent, 1500)).toBe(200);
    const alerts = await webhook.waitFor(1, (request) => request.json.trigger === 'policy_canary' && String(request.json.title).includes(`promoted (${canary.id})`));
    expect(alerts[0].json.severity).toBe('info');
  });

  it('are promoted by hand through the API: the new version in force for every agent', async () => {
    const canary = await startCanary(org, { source: refunds(50), share: 10, minDecisions: 1000 });
    const promoted = await call<CanaryView>(gateway.url, 'POST', `/admin/canaries/${canary.id}/promote`, { adminToken: org.adminToken });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({ state: 'promoted', outcome: 'promoted by hand' });
    for (const agent of agents.slice(0, 5)) expect(await refund(agent, 60)).toBe(403);
    const again = await call<{ error: string }>(gateway.url, 'POST', `/admin/canaries/${canary.id}/abort`, { adminToken: org.adminToken });
    expect(again.status).toBe(409);
    await putPolicy(org, refunds(1000));
  });

  it('are started, shown, promoted and aborted with `ags policy canary`, and the running gateway decides on each step', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'canary-cli-'));
    fs.writeFileSync(path.join(dir, 'refunds.yaml'), refunds(10));
    const started = await ags('policy', 'canary', 'start', 'refunds', '--file', path.join(dir, 'refunds.yaml'), '--share', '99', '--min-decisions', '1000', '--org', org.id);
    expect(started.stderr).toBe('');
    expect(started.code).toBe(0);
    const id = /^id:\s+(can_\w+)$/m.exec(started.stdout)?.[1];
    expect(id).toBeDefined();
    expect(started.stdout).toMatch(/^state:\s+running$/m);
    const inCohort = agents.find((agent) => inCanary(id!, agent.id, 99))!;
    await eventually(async () => (await refund(inCohort, 20)) === 403, 10_000, 'the CLI-started canary deciding at the gateway');

    const status = await ags('policy', 'canary', 'status', '--org', org.id);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`id:`);
    expect(status.stdout).toContain(id!);

    const aborted = await ags('policy', 'canary', 'abort', id!, '--org', org.id);
    expect(aborted.code).toBe(0);
    expect(aborted.stdout).toMatch(/^state:\s+aborted$/m);
    await eventually(async () => (await refund(inCohort, 20)) === 200, 10_000, 'the CLI abort reaching the gateway');

    const next = await ags('policy', 'canary', 'start', 'refunds', '--file', path.join(dir, 'refunds.yaml'), '--share', '10', '--min-decisions', '1000', '--org', org.id);
    const nextId = /^id:\s+(can_\w+)$/m.exec(next.stdout)![1];
    const promoted = await ags('policy', 'canary', 'promote', nextId, '--org', org.id);
    expect(promoted.code).toBe(0);
    expect(promoted.stdout).toMatch(/^state:\s+promoted$/m);
    await eventually(async () => (await refund(agents[0], 20)) === 403, 10_000, 'the CLI promotion reaching the gateway');
    const alerts = await webhook.waitFor(1, (request) => String(request.json.title).includes(`started (${id})`));
    expect(alerts[0].json.trigger).toBe('policy_canary');
    await putPolicy(org, refunds(1000));
    // Five CLI runs, each starting Nest and connecting to the database.
  }, 240_000);

  it('refuse bad input with a 400 naming it, a second rollout or an edit of the policy with a 409', async () => {
    for (const share of [0, 100, 150, 12.5, 'ten']) {
      const response = await call<{ error: string; message: string }>(gateway.url, 'POST', '/admin/canaries', { adminToken: org.adminToken, body: { policy: 'refunds', source: refunds(10), share } });
      expect(response.status).toBe(400);
      expect(response.body.message).toContain('share must be a whole percentage from 1 to 99');
    }
    const badWindow = await call<{ message: string }>(gateway.url, 'POST', '/admin/canaries', { adminToken: org.adminToken, body: { policy: 'refunds', source: refunds(10), share: 10, window: '90d' } });
    expect(badWindow.status).toBe(400);
    expect(badWindow.body.message).toContain('window must be from 1s to 30d');
    const badPolicy = await call<{ error: string; errors: Array<{ line: number }> }>(gateway.url, 'POST', '/admin/canaries', {
      adminToken: org.adminToken,
      body: { policy: 'refunds', source: refunds(10).replace('args.amount >', 'args.amount =>'), share: 10 },
    });
    expect(badPolicy.status).toBe(400);
    expect(badPolicy.body.error).toBe('invalid_policy');
    expect(badPolicy.body.errors[0].line).toBe(5);
    const shadow = await call<{ message: string }>(gateway.url, 'POST', '/admin/canaries', { adminToken: org.adminToken, body: { policy: 'refunds', source: `mode: shadow\n${refunds(10)}`, share: 10 } });
    expect(shadow.status).toBe(400);
    const same = await call<{ message: string }>(gateway.url, 'POST', '/admin/canaries', { adminToken: org.adminToken, body: { policy: 'refunds', source: refunds(1000), share: 10 } });
    expect(same.status).toBe(400);

    const canary = await startCanary(org, { source: refunds(10), share: 10, minDecisions: 1000 });
    const second = await call<{ error: string; message: string }>(gateway.url, 'POST', '/admin/canaries', { adminToken: org.adminToken, body: { policy: 'refunds', source: refunds(20), share: 10 } });
    expect(second.status).toBe(409);
    expect(second.body.message).toContain(canary.id);
    const edit = await call<{ message: string }>(gateway.url, 'PUT', '/admin/policies/refunds', { adminToken: org.adminToken, body: refunds(30), headers: YAML });
    expect(edit.status).toBe(409);
    expect(edit.body.message).toContain('canary rollout running');
    expect((await call(gateway.url, 'POST', `/admin/canaries/${canary.id}/abort`, { adminToken: org.adminToken })).status).toBe(200);
  });

  it('refuse a new version that fails stored tests, unless forced', async () => {
    const tests = `tests:
  - name: small refunds pass
    input: { agent: { trust_tier: verified }, action: "read:refunds", args: { amount: 40 } }
    expect: { decision: allow }
`;
    expect((await call(gateway.url, 'PUT', '/admin/policy-tests/refunds', { adminToken: org.adminToken, body: tests, headers: YAML })).status).toBe(201);
    const refused = await call<{ error: string; failures: Array<{ test: string }> }>(gateway.url, 'POST', '/admin/canaries', { adminToken: org.adminToken, body: { policy: 'refunds', source: refunds(10), share: 10 } });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('policy_tests_failed');
    expect(refused.body.failures.map((failure) => failure.test)).toEqual(['small refunds pass']);
    const forced = await call<CanaryView>(gateway.url, 'POST', '/admin/canaries?force=true', { adminToken: org.adminToken, body: { policy: 'refunds', source: refunds(10), share: 10, minDecisions: 1000 } });
    expect(forced.status).toBe(201);
    // Earlier rollouts wrote start events too: wait for this one's, written in a batch.
    let event: AuditEntryView | undefined;
    await eventually(async () => {
      event = (await auditEntries(gateway, org, 'action=admin:policy.canary.start', 1)).find((entry) => entry.details?.rollout === forced.body.id);
      return event !== undefined;
    }, 10_000, 'the forced start in the audit trail');
    expect(event!.details).toMatchObject({ rollout: forced.body.id, forced: true });
    expect((await call(gateway.url, 'POST', `/admin/canaries/${forced.body.id}/abort`, { adminToken: org.adminToken })).status).toBe(200);
    expect((await call(gateway.url, 'DELETE', '/admin/policy-tests/refunds', { adminToken: org.adminToken })).status).toBe(204);
  });

  it('belong to their organization: another one neither sees, promotes nor aborts them, and its agents decide on their own policies', async () => {
    const canary = await startCanary(org, { source: refunds(100), share: 99, minDecisions: 1000 });
    const other = await createOrganization(gateway);
    for (const [method, suffix] of [['GET', ''], ['POST', '/promote'], ['POST', '/abort']] as const) {
      expect((await call(gateway.url, method, `/admin/canaries/${canary.id}${suffix}`, { adminToken: other.adminToken })).status).toBe(404);
    }
    expect((await call<{ canaries: unknown[] }>(gateway.url, 'GET', '/admin/canaries', { adminToken: other.adminToken })).body.canaries).toEqual([]);
    // The other organization's own policy of the same name decides for its agents.
    await putPolicy(other, refunds(1000));
    const outsider = await createAgent(gateway, other, { name: 'outsider' });
    expect(await refund(outsider, 500)).toBe(200);
    expect((await call(gateway.url, 'POST', `/admin/canaries/${canary.id}/abort`, { adminToken: org.adminToken })).status).toBe(200);
  });
});
