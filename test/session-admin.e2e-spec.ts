import { execFile } from 'node:child_process';
import path from 'node:path';
import { call } from './support/http-client';
import { auditEntries, createAgent, proxy, TestAgent } from './support/org-fixtures';
import { eventually } from './support/processes';
import { createOrganization, startGateway, testEnv, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * The sessions admin API (docs/policies.md "Labels", "Seen"): one session as a timeline, and
 * labels ended by an admin (API and `ags sessions clear-labels`), audited, one organization
 * never reaching another's, on a gateway started the way users start it (cluster events
 * through Redis, as the CLI reaches a running gateway).
 */

const CLI = path.resolve(__dirname, '../dist/src/cli/main.js');
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const POLICY = `name: exfiltration
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
  - name: no-mail-after-customers
    condition: action starts_with "write:mail/" and session.labels.has("private_data")
    action: deny
    reason: No mail in a session that read customer records
  - name: no-mail-after-web
    condition: action starts_with "write:mail/" and agent.labels.has("untrusted_content")
    action: deny
    reason: No mail from an agent that read untrusted content
`;

let upstream: TestUpstream;
let gateway: TestGateway;
let org: TestOrganization;
let other: TestOrganization;

const session = (id: string) => ({ 'x-service-session': id });
const clear = (as: TestOrganization, body: Record<string, unknown>) => call(gateway.url, 'POST', '/admin/sessions/clear-labels', { adminToken: as.adminToken, body });
const mail = (agent: TestAgent, id: string) => proxy(gateway, agent.token, 'POST', '/mail/send', session(id));

function ags(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...testEnv({ REDIS_URL }) }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  upstream = await startUpstream();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url, REDIS_URL });
  org = await createOrganization(gateway, 'enterprise', 'Session admin org');
  other = await createOrganization(gateway, 'enterprise', 'Session admin neighbour');
  const put = await call(gateway.url, 'PUT', '/admin/policies/exfiltration', { adminToken: org.adminToken, body: POLICY, headers: { 'content-type': 'application/yaml' } });
  expect([200, 201]).toContain(put.status);
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

describe('clearing labels', () => {
  it('ends the labels of one session, and only of that session, audited', async () => {
    const agent = await createAgent(gateway, org, { name: 'reader' });
    await proxy(gateway, agent.token, 'GET', '/customers/1', session('s-a'));
    await proxy(gateway, agent.token, 'GET', '/customers/2', session('s-b'));
    expect((await mail(agent, 's-a')).status).toBe(403);
    const cleared = await clear(org, { agentId: agent.id, scope: 'session', sessionId: 's-a' });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toEqual({ agentId: agent.id, scope: 'session', sessionId: 's-a', cleared: true });
    expect((await mail(agent, 's-a')).status).toBe(200);
    expect((await mail(agent, 's-b')).status).toBe(403);
    const entries = await auditEntries(gateway, org, `action=admin:session&agentId=${agent.id}`, 1);
    expect(entries[0]).toMatchObject({ action: 'admin:session.labels_clear', agentId: agent.id, details: { scope: 'session', sessionId: 's-a' } });
  });

  it('ends the labels on the agent itself, in every session', async () => {
    const agent = await createAgent(gateway, org, { name: 'browser' });
    await proxy(gateway, agent.token, 'GET', '/web/page', session('w-1'));
    expect((await mail(agent, 'w-2')).status).toBe(403);
    expect((await clear(org, { agentId: agent.id, scope: 'agent' })).body).toEqual({ agentId: agent.id, scope: 'agent', sessionId: null, cleared: true });
    expect((await mail(agent, 'w-2')).status).toBe(200);
  });

  it('never reaches another organization: its agent is not found and keeps its labels', async () => {
    const agent = await createAgent(gateway, org, { name: 'guarded' });
    await proxy(gateway, agent.token, 'GET', '/web/page', session('g-1'));
    const refused = await clear(other, { agentId: agent.id, scope: 'agent' });
    expect(refused.status).toBe(404);
    expect((await mail(agent, 'g-2')).status).toBe(403);
    expect(await auditEntries(gateway, other, 'action=admin:session', 1)).toEqual([]);
  });

  it('refuses a bad scope or session id with a 400 naming the field', async () => {
    const agent = await createAgent(gateway, org, { name: 'typo' });
    const scope = await clear(org, { agentId: agent.id, scope: 'planet' });
    expect(scope.status).toBe(400);
    expect(JSON.stringify(scope.body)).toContain('scope');
    const id = await clear(org, { agentId: agent.id, scope: 'session', sessionId: 'a b' });
    expect(id.status).toBe(400);
    expect(JSON.stringify(id.body)).toContain('sessionId must be characters of A-Z a-z 0-9 . _ : -');
  });

  it('ends them from the command line too: ags sessions clear-labels reaches the running gateway', async () => {
    const agent = await createAgent(gateway, org, { name: 'cli-target' });
    await proxy(gateway, agent.token, 'GET', '/web/page', session('c-1'));
    expect((await mail(agent, 'c-2')).status).toBe(403);
    const result = await ags('sessions', 'clear-labels', agent.id, '--agent-labels', '--org', org.id);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    expect(result.stdout).toContain(`agentId: ${agent.id}`);
    await eventually(async () => (await mail(agent, 'c-2')).status === 200, 10_000, 'the gateway applies the CLI clear');
    const entries = await auditEntries(gateway, org, `action=admin:session&agentId=${agent.id}`, 1);
    expect(entries[0]).toMatchObject({ action: 'admin:session.labels_clear', agentId: agent.id, details: { actor: 'cli', scope: 'agent', sessionId: null } });
  });
});

describe('a session timeline', () => {
  it('lists the calls of one session oldest first, with the labels each read and added and its decision', async () => {
    const agent = await createAgent(gateway, org, { name: 'timeline' });
    await proxy(gateway, agent.token, 'GET', '/customers/7', session('t-1'));
    await proxy(gateway, agent.token, 'GET', '/orders/1', session('t-other'));
    await proxy(gateway, agent.token, 'GET', '/web/page', session('t-1'));
    await proxy(gateway, agent.token, 'POST', '/mail/send', session('t-1'));
    const ask = () => call<{ calls: Array<Record<string, unknown>>; labels: string[]; agentLabels: string[]; truncated: boolean }>(gateway.url, 'GET', `/admin/sessions/timeline?agentId=${agent.id}&sessionId=t-1`, { adminToken: org.adminToken });
    await eventually(async () => (await ask()).body.calls?.length === 3, 10_000, 'the calls in the trail');
    const timeline = (await ask()).body;
    expect(timeline).toMatchObject({ labels: ['private_data'], agentLabels: ['untrusted_content'], truncated: false });
    expect(timeline.calls.map((each) => [each.action, each.decision, each.labels, each.agentLabels, each.labelsAdded])).toEqual([
      ['read:customers/7', 'allow', [], [], ['private_data']],
      ['read:web/page', 'allow', ['private_data'], [], ['untrusted_content']],
      ['write:mail/send', 'deny', ['private_data'], ['untrusted_content'], []],
    ]);
    expect(timeline.calls[2]).toMatchObject({ policy: 'exfiltration', rule: 'no-mail-after-customers', source: 'proxy' });
    const foreign = await call(gateway.url, 'GET', `/admin/sessions/timeline?agentId=${agent.id}&sessionId=t-1`, { adminToken: other.adminToken });
    expect(foreign.status).toBe(404);
  });
});
