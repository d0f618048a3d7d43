import { call } from './support/http-client';
import { auditEntries, createAgent, proxy, TestAgent } from './support/org-fixtures';
import { evaluate, freePort, PdpClient, pdpClient } from './support/pdp-client';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * Policies that remember (docs/policies.md "Sessions"): labels, call sequences and budgets
 * through the proxy and /v1/check, on a gateway started the way users start it.
 */

/** The worked example of docs/policies.md: customer records, then an untrusted page, then mail. */
const THREE_STEP = `name: exfiltration
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
    reason: An untrusted web page was fetched
  - name: no-way-out
    condition: action starts_with "write:mail/" and session.labels.has("private_data") and session.labels.has("untrusted_content")
    action: deny
    reason: Private data and untrusted content in one session; nothing leaves by mail
`;

const AGENT_SCOPED = `name: agent-taint
rules:
  - name: fetches-web
    condition: action starts_with "read:web/"
    action: label
    labels: [untrusted_content]
    scope: agent
    ttl: 1h
    reason: An untrusted web page was fetched
  - name: no-mail-after-web
    condition: action starts_with "write:mail/" and agent.labels.has("untrusted_content")
    action: deny
    reason: This agent read untrusted content within the hour
`;

async function putPolicy(gateway: TestGateway, org: TestOrganization, yaml: string): Promise<void> {
  const name = /^name: (\S+)/.exec(yaml)![1];
  const response = await call(gateway.url, 'PUT', `/admin/policies/${name}`, { adminToken: org.adminToken, body: yaml, headers: { 'content-type': 'application/yaml' } });
  expect([200, 201]).toContain(response.status);
}

let upstream: TestUpstream;
let gateway: TestGateway;
let grpcPort: number;

beforeAll(async () => {
  upstream = await startUpstream();
  grpcPort = await freePort();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url, PDP_GRPC_PORT: String(grpcPort) });
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

describe('the three-step attack through /proxy', () => {
  let org: TestOrganization;
  let agent: TestAgent;

  beforeAll(async () => {
    org = await createOrganization(gateway, 'enterprise', 'Three-step org');
    agent = await createAgent(gateway, org, { name: 'mailer' });
    await putPolicy(gateway, org, THREE_STEP);
  });

  const session = (id: string) => ({ 'x-service-session': id });

  it('lets each step through alone and denies the third once the session carries both labels', async () => {
    expect((await proxy(gateway, agent.token, 'GET', '/customers/42', session('s-attack'))).status).toBe(200);
    expect((await proxy(gateway, agent.token, 'POST', '/mail/send', session('s-attack'))).status).toBe(200);
    expect((await proxy(gateway, agent.token, 'GET', '/web/page', session('s-attack'))).status).toBe(200);
    const third = await proxy(gateway, agent.token, 'POST', '/mail/send', session('s-attack'));
    expect(third.status).toBe(403);
    expect(third.body).toMatchObject({ error: 'forbidden', policy: 'exfiltration', reason: 'Private data and untrusted content in one session; nothing leaves by mail' });
  });

  it('keeps sessions apart: the same calls spread over two sessions are let through', async () => {
    expect((await proxy(gateway, agent.token, 'GET', '/customers/42', session('s-one'))).status).toBe(200);
    expect((await proxy(gateway, agent.token, 'GET', '/web/page', session('s-two'))).status).toBe(200);
    expect((await proxy(gateway, agent.token, 'POST', '/mail/send', session('s-one'))).status).toBe(200);
    expect((await proxy(gateway, agent.token, 'POST', '/mail/send', session('s-two'))).status).toBe(200);
  });

  it('without a session id applies the agent own scope: every undeclared call is one session', async () => {
    const other = await createAgent(gateway, org, { name: 'undeclared' });
    expect((await proxy(gateway, other.token, 'GET', '/customers/1')).status).toBe(200);
    expect((await proxy(gateway, other.token, 'GET', '/web/page')).status).toBe(200);
    expect((await proxy(gateway, other.token, 'POST', '/mail/send')).status).toBe(403);
  });

  it('gives another agent naming the same session id a fresh session', async () => {
    const other = await createAgent(gateway, org, { name: 'namer' });
    expect((await proxy(gateway, other.token, 'POST', '/mail/send', session('s-attack'))).status).toBe(200);
  });

  it('names the session, the labels read and the labels added in the audit entries', async () => {
    const entries = await auditEntries(gateway, org, `agentId=${agent.id}`, 8);
    const denied = entries.find((entry) => entry.decision === 'deny')!;
    expect(denied.details).toMatchObject({ session: { id: 's-attack', labels: ['private_data', 'untrusted_content'], agentLabels: [] } });
    const labelled = entries.filter((entry) => (entry.details?.session as { labelsAdded?: string[] } | undefined)?.labelsAdded !== undefined);
    expect(labelled.map((entry) => (entry.details!.session as { labelsAdded: string[] }).labelsAdded).sort()).toEqual([['private_data'], ['private_data'], ['untrusted_content'], ['untrusted_content']]);
  });

  it('refuses a session id over 128 characters or with other characters, naming the header', async () => {
    const long = await proxy(gateway, agent.token, 'GET', '/customers/1', session('s'.repeat(129)));
    expect(long.status).toBe(400);
    expect(long.body).toMatchObject({ error: 'invalid_request', message: 'X-Service-Session must be at most 128 characters' });
    const odd = await proxy(gateway, agent.token, 'GET', '/customers/1', session('a b'));
    expect(odd.status).toBe(400);
    expect(odd.body.message).toBe('X-Service-Session must be characters of A-Z a-z 0-9 . _ : -');
  });
});

describe('the three-step attack through gRPC Evaluate', () => {
  let client: PdpClient;
  afterAll(() => client?.close());

  it('remembers the session a PolicyRequest names in session_id', async () => {
    const org = await createOrganization(gateway, 'enterprise', 'gRPC session org');
    await putPolicy(gateway, org, THREE_STEP);
    const agent = await createAgent(gateway, org, { name: 'grpc-mailer' });
    const key = (await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'grpc' } })).body.key;
    client = pdpClient(grpcPort);
    const ask = (action: string, sessionId: string) => evaluate(client, key, { agentId: agent.id, action, sessionId });
    expect((await ask('read:customers/1', 'g-1')).decision).toBe('DECISION_ALLOW');
    expect((await ask('read:web/page', 'g-1')).decision).toBe('DECISION_ALLOW');
    expect((await ask('write:mail/send', 'g-2')).decision).toBe('DECISION_ALLOW');
    const third = await ask('write:mail/send', 'g-1');
    expect(third).toMatchObject({ decision: 'DECISION_DENY', policy: 'exfiltration', rule: 'no-way-out', cacheable: false });
  });
});

describe('agent-scoped labels', () => {
  it('survive a new session: the agent cannot shed one by starting over', async () => {
    const org = await createOrganization(gateway, 'enterprise', 'Agent label org');
    const agent = await createAgent(gateway, org, { name: 'browser' });
    await putPolicy(gateway, org, AGENT_SCOPED);
    expect((await proxy(gateway, agent.token, 'POST', '/mail/send', { 'x-service-session': 'first' })).status).toBe(200);
    expect((await proxy(gateway, agent.token, 'GET', '/web/page', { 'x-service-session': 'first' })).status).toBe(200);
    const fresh = await proxy(gateway, agent.token, 'POST', '/mail/send', { 'x-service-session': 'brand-new' });
    expect(fresh.status).toBe(403);
    expect(fresh.body.reason).toBe('This agent read untrusted content within the hour');
    expect((await proxy(gateway, agent.token, 'POST', '/mail/send')).status).toBe(403);
  });
});

describe('two organizations', () => {
  it('never share a session, whatever ids they name', async () => {
    const first = await createOrganization(gateway, 'enterprise', 'Tenant one');
    const second = await createOrganization(gateway, 'enterprise', 'Tenant two');
    await putPolicy(gateway, first, THREE_STEP);
    await putPolicy(gateway, second, THREE_STEP);
    const one = await createAgent(gateway, first, { name: 'same-name' });
    const two = await createAgent(gateway, second, { name: 'same-name' });
    const session = { 'x-service-session': 'shared-id' };
    expect((await proxy(gateway, one.token, 'GET', '/customers/1', session)).status).toBe(200);
    expect((await proxy(gateway, one.token, 'GET', '/web/page', session)).status).toBe(200);
    expect((await proxy(gateway, two.token, 'POST', '/mail/send', session)).status).toBe(200);
    expect((await proxy(gateway, one.token, 'POST', '/mail/send', session)).status).toBe(403);
  });
});

describe('budgets through /v1/check and /v1/audit', () => {
  let org: TestOrganization;
  let key: string;

  beforeAll(async () => {
    org = await createOrganization(gateway, 'enterprise', 'Budget org');
    key = (await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'budget test' } })).body.key;
    await putPolicy(gateway, org, 'name: spend\nmatch: { plugin: Llm }\nrules:\n  - name: daily\n    condition: budget(per_agent, 10, 1d)\n    action: deny\n    cost: 4\n    reason: The daily model budget is spent\n');
  });

  const check = (agentId: string) => call<{ decision: string; decisionId: string }>(gateway.url, 'POST', '/v1/check', { body: { agentId, plugin: 'Llm', function: 'Complete' }, headers: { 'x-api-key': key } });
  const report = (agentId: string, extra: Record<string, unknown>) =>
    call(gateway.url, 'POST', '/v1/audit', { body: { agentId, plugin: 'Llm', function: 'Complete', decision: 'allow', durationMs: 5, ...extra }, headers: { 'x-api-key': key } });

  it('reserves the rule cost before the call and answers 429 budget_exceeded once it does not fit', async () => {
    const agent = await createAgent(gateway, org, { name: 'spender' });
    expect((await check(agent.id)).body.decision).toBe('allow');
    expect((await check(agent.id)).body.decision).toBe('allow');
    const third = await check(agent.id);
    expect(third.status).toBe(429);
    expect(third.body).toMatchObject({ error: 'budget_exceeded', limit: '10/1d per_agent budget', policy: 'spend' });
    expect((third.body as unknown as { retry_after: number }).retry_after).toBeGreaterThan(0);
  });

  it('gives a reservation back when the outcome reports the call failed', async () => {
    const agent = await createAgent(gateway, org, { name: 'failer' });
    const first = await check(agent.id);
    await check(agent.id);
    expect((await check(agent.id)).status).toBe(429);
    expect((await report(agent.id, { decisionId: first.body.decisionId, failed: true })).status).toBe(202);
    expect((await check(agent.id)).body.decision).toBe('allow');
    expect((await check(agent.id)).status).toBe(429);
  });

  it('settles a reservation at the cost the outcome reports', async () => {
    const agent = await createAgent(gateway, org, { name: 'settler' });
    const first = await check(agent.id);
    expect((await report(agent.id, { decisionId: first.body.decisionId, cost: 1 })).status).toBe(202);
    // 1 + 4 + 4 = 9 fits in 10; a fourth call would not.
    expect((await check(agent.id)).body.decision).toBe('allow');
    expect((await check(agent.id)).body.decision).toBe('allow');
    expect((await check(agent.id)).status).toBe(429);
  });

  it.each([
    [-1, 'cost must not be negative'],
    ['5', 'cost must be a number'],
    [2e9, 'cost must be at most 1000000000'],
  ])('refuses a cost of %p with a 400 naming it', async (cost, message) => {
    const agent = await createAgent(gateway, org, { name: 'bad-cost' });
    const decided = await check(agent.id);
    const answer = await report(agent.id, { decisionId: decided.body.decisionId, cost });
    expect(answer.status).toBe(400);
    expect(JSON.stringify(answer.body)).toContain(message);
  });

  it('refuses a budget rule that cannot hold, with its position', async () => {
    const response = await call<{ errors: { line: number; column: number; message: string }[] }>(gateway.url, 'PUT', '/admin/policies/broken', {
      adminToken: org.adminToken,
      body: 'name: broken\nrules:\n  - condition: budget(per_planet, 0, 1d)\n    action: deny\n    reason: r\n',
      headers: { 'content-type': 'application/yaml' },
    });
    expect(response.status).toBe(400);
    expect(response.body.errors.map(({ line, column, message }) => `${line}:${column} ${message.split(':')[0]}`)).toEqual(['3:23 bad budget scope', '3:35 bad budget limit']);
  });
});

describe('a budget shared by two gateway instances on Redis', () => {
  let second: TestGateway;
  let third: TestGateway;

  beforeAll(async () => {
    second = await startGateway({ REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
    third = await startGateway({ REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
  });
  afterAll(async () => {
    await second?.close();
    await third?.close();
  });

  it('never admits past its limit under concurrent calls to both', async () => {
    const org = await createOrganization(second, 'enterprise', 'Shared budget org');
    const key = (await call<{ key: string }>(second.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'shared' } })).body.key;
    await putPolicy(second, org, 'name: shared\nrules:\n  - name: org-wide\n    condition: budget(per_org, 30, 1h)\n    action: deny\n    cost: 3\n    reason: The shared budget is spent\n');
    const agent = await createAgent(second, org, { name: 'racer' });
    // Both instances have the policy (the second one reads it on its first decision).
    const ask = (on: TestGateway) => call<{ decision: string }>(on.url, 'POST', '/v1/check', { body: { agentId: agent.id, plugin: 'Llm', function: 'Complete' }, headers: { 'x-api-key': key } });
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => ask(i % 2 === 0 ? second : third)));
    const admitted = answers.filter((answer) => answer.status === 200 && answer.body.decision === 'allow').length;
    const refused = answers.filter((answer) => answer.status === 429).length;
    expect(admitted).toBe(10);
    expect(refused).toBe(30);
  });
});
