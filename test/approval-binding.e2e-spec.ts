import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { AlertReceiver, startAlertReceiver } from './support/alert-receivers';
import { call, TestResponse } from './support/http-client';
import { startMcpUpstream, TestMcpServer } from './support/mcp-upstream';
import { createAgent, TestAgent } from './support/org-fixtures';
import { createOrganization, startGateway, TEST_PUBLIC_URL, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * An approval lifts only the hold it was asked for (docs/security.md "Approvals"): every question
 * of a request is evaluated (its derived and declared actions, each delegator), any deny wins
 * over any hold, and an approval is bound to the whole decision input, so a retry that differs
 * in anything (entry point, actions, plugin and function, method, path, body, holds) is refused.
 */

const POLICIES: Array<[string, string]> = [
  ['no-admin', 'name: no-admin\nmatch: { action: "write:admin/*" }\nrules:\n  - condition: agent.trust_tier < privileged\n    action: deny\n    reason: admin writes need a privileged agent\n'],
  ['big-refunds', 'name: big-refunds\nmatch: { action: "write:refunds*" }\nrules:\n  - condition: args.amount > 100\n    action: require_approval\n    reason: Refunds over 100 need a person\n'],
  ['no-intern-refunds', 'name: no-intern-refunds\nmatch: { action: "write:refunds*" }\nrules:\n  - condition: agent.tags contains "intern"\n    action: deny\n    reason: interns make no refunds\n'],
  ['no-deletes', 'name: no-deletes\nmatch: { action: "Payments.Delete*" }\nrules:\n  - condition: agent.trust_tier < privileged\n    action: deny\n    reason: nobody deletes payments\n'],
  ['pdp-refunds', 'name: pdp-refunds\nmatch: { action: "Payments.Refund" }\nrules:\n  - condition: args.amount > 100\n    action: require_approval\n    reason: Refunds over 100 need a person\n'],
  ['mcp-refunds', 'name: mcp-refunds\nmatch: { plugin: pay, function: refund }\nrules:\n  - condition: args.amount > 100\n    action: require_approval\n    reason: Refunds over 100 need a person\n'],
];

let upstream: TestUpstream;
let mcpUpstream: TestMcpServer;
let webhook: AlertReceiver;
let gateway: TestGateway;
let org: TestOrganization;
let agent: TestAgent;
let intern: TestAgent;
let apiKey: string;
let scratch: string;

beforeAll(async () => {
  upstream = await startUpstream();
  mcpUpstream = await startMcpUpstream([{ name: 'refund', description: 'Refunds', inputSchema: { type: 'object', properties: { amount: { type: 'number' } } } }]);
  webhook = await startAlertReceiver();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-binding-'));
  fs.writeFileSync(path.join(scratch, 'mcp.yaml'), `servers:\n  - name: pay\n    url: ${mcpUpstream.url}\n`);
  gateway = await startGateway({ UPSTREAM_URL: upstream.url, ALERT_WEBHOOK_URL: webhook.url, MCP_SERVERS: path.join(scratch, 'mcp.yaml') });
  org = await createOrganization(gateway, 'enterprise', 'Approval binding org');
  for (const [name, yaml] of POLICIES) await putPolicy(name, yaml);
  agent = await createAgent(gateway, org, { name: 'refund-bot', trustTier: 'verified' });
  intern = await createAgent(gateway, org, { name: 'intern-bot', trustTier: 'verified', tags: ['intern'] });
  apiKey = (await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'binding' } })).body.key;
});

afterAll(async () => {
  await gateway.close();
  await Promise.all([upstream.close(), mcpUpstream.close(), webhook.close()]);
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function putPolicy(name: string, yaml: string): Promise<void> {
  const put = await call(gateway.url, 'PUT', `/admin/policies/${name}`, { adminToken: org.adminToken, body: yaml, headers: { 'content-type': 'application/yaml' } });
  expect([200, 201]).toContain(put.status);
}

function send(token: string, method: string, proxied: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<TestResponse> {
  return call(gateway.url, method, `/proxy${proxied}`, { bearer: token, body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
}

function check(body: Record<string, unknown>): Promise<TestResponse> {
  return call(gateway.url, 'POST', '/v1/check', { headers: { 'x-api-key': apiKey }, body: { agentId: agent.id, ...body } });
}

async function approve(id: string): Promise<void> {
  const decided = await call(gateway.url, 'POST', `/admin/approvals/${id}/approve`, { adminToken: org.adminToken, body: {} });
  expect(decided.body.status).toBe('approved');
}

/** A request held, then approved: its approval id. */
async function approvedHold(held: TestResponse): Promise<string> {
  expect([held.status, held.body.error]).toEqual([202, 'approval_required']);
  const id = String(held.body.approvalId);
  await approve(id);
  return id;
}

describe('a hold never hides a deny', () => {
  it('denies a write to an admin path whatever the declared action a refund approval would have lifted (the upstream never sees it)', async () => {
    const before = upstream.received('/admin/users').length;
    const disguised = await send(agent.token, 'POST', '/admin/users', { amount: 500 }, { 'x-service-action': 'write:refunds' });
    expect([disguised.status, disguised.body.policy]).toEqual([403, 'no-admin']);
    expect(upstream.received('/admin/users').length).toBe(before);
  });

  it('denies a check whose function a policy denies, whatever the held action it names', async () => {
    const disguised = await check({ plugin: 'Payments', function: 'DeleteAll', action: 'Payments.Refund', arguments: { amount: 500 } });
    expect(disguised.body).toMatchObject({ decision: 'deny', policy: 'no-deletes' });
  });

  it('denies a refund a later policy denies for the agent’s tags, though an earlier one only holds it', async () => {
    const refused = await send(intern.token, 'POST', '/refunds/9', { amount: 500 });
    expect([refused.status, refused.body.policy]).toEqual([403, 'no-intern-refunds']);
  });

  it('denies a delegated request its delegator may not make, though the acting agent’s own is only held', async () => {
    const granted = await call<{ grant: string }>(gateway.url, 'POST', '/api/v1/identity/delegate', { bearer: intern.token, body: { agentId: agent.id } });
    expect(granted.status).toBe(201);
    const exchanged = await call<{ access_token: string }>(gateway.url, 'POST', '/api/v1/identity/token', {
      body: { grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: granted.body.grant, actor_token: agent.token },
    });
    expect(exchanged.status).toBe(200);
    const onBehalf = await send(exchanged.body.access_token, 'POST', '/refunds/10', { amount: 500 });
    expect([onBehalf.status, onBehalf.body.policy]).toEqual([403, 'no-intern-refunds']);
    // The acting agent on its own is held, as before.
    expect((await send(agent.token, 'POST', '/refunds/10', { amount: 500 })).status).toBe(202);
  });
});

describe('an approval is bound to the whole request', () => {
  it('lets only the very proxy request through: another method, path or declared action is refused, and the approval is not spent', async () => {
    const id = await approvedHold(await send(agent.token, 'POST', '/refunds/20', { amount: 500 }));
    const elsewhere = await send(agent.token, 'POST', '/orders/20', { amount: 500 }, { 'x-service-approval': id, 'x-service-action': 'write:refunds/20' });
    expect([elsewhere.status, elsewhere.body.reason]).toEqual([403, `Approval ${id} was asked for another request (write:refunds/20)`]);
    const put = await send(agent.token, 'PUT', '/refunds/20', { amount: 500 }, { 'x-service-approval': id, 'x-service-action': 'write:refunds/20' });
    expect(put.status).toBe(403);
    expect(put.body.reason).toMatch(new RegExp(`^Approval ${id} was asked for another`));
    expect((await send(agent.token, 'POST', '/refunds/20', { amount: 500 }, { 'x-service-approval': id })).status).toBe(200);
  });

  it('lets only the very check through: another function under the same declared action is refused', async () => {
    const id = await approvedHold(await check({ plugin: 'Payments', function: 'Refund', arguments: { amount: 500 } }));
    const other = await check({ plugin: 'Payments', function: 'RefundAll', action: 'Payments.Refund', arguments: { amount: 500 }, approvalId: id });
    expect(other.body.decision).toBe('deny');
    expect(other.body.reason).toMatch(new RegExp(`^Approval ${id} was asked for another`));
    expect((await check({ plugin: 'Payments', function: 'Refund', arguments: { amount: 500 }, approvalId: id })).body.decision).toBe('allow');
  });

  // Item 5 of the review (an approval spent through another entry point) is this binding: the
  // entry point is part of what an approval is bound to.
  it('spends an approval asked over MCP only over MCP, not through /v1/check with an API key', async () => {
    const client = new Client({ name: 'e2e-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/pay`), { requestInit: { headers: { authorization: `Bearer ${agent.token}` } } }));
    try {
      const error = await client.callTool({ name: 'refund', arguments: { amount: 400 } }).then(
        () => new Error('allowed'),
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(McpError);
      const approvalId = String(((error as McpError).data as Record<string, unknown>).approvalId);
      await approve(approvalId);
      const viaCheck = await check({ plugin: 'pay', function: 'refund', action: 'call:pay/refund', resource: 'refund', arguments: { amount: 400 }, approvalId });
      expect([viaCheck.body.decision, viaCheck.body.reason]).toEqual(['deny', `Approval ${approvalId} was asked through another entry point (mcp)`]);
      const result = await client.callTool({ name: 'refund', arguments: { amount: 400 }, _meta: { approvalId } });
      expect(result.isError).not.toBe(true);
    } finally {
      await client.close();
    }
  });

  it('lifts no hold it was not asked for: a policy holding the request since is not lifted by the approval', async () => {
    const id = await approvedHold(await send(agent.token, 'POST', '/refunds/30', { amount: 500, note: 'new-hold' }));
    await putPolicy('refund-notes', 'name: refund-notes\nmatch: { action: "write:refunds*" }\nrules:\n  - name: noted\n    condition: args.note == "new-hold"\n    action: require_approval\n    reason: Noted refunds need a person\n');
    const retried = await send(agent.token, 'POST', '/refunds/30', { amount: 500, note: 'new-hold' }, { 'x-service-approval': id });
    expect([retried.status, retried.body.reason]).toEqual([403, `Approval ${id} was not asked for the hold of refund-notes: noted`]);
  });
});

describe('what a person is shown', () => {
  it('names the real method and path in the notification and on the approval page, beside the declared action', async () => {
    const held = await send(agent.token, 'POST', '/orders/77', { amount: 500 }, { 'x-service-action': 'write:refunds/77' });
    expect(held.status).toBe(202);
    const id = String(held.body.approvalId);
    const [notification] = await webhook.waitFor(1, (request) => request.json.trigger === 'approval' && String(request.json.message).includes(id));
    expect(notification.json.title).toContain('`POST /orders/77`');
    expect(String(notification.json.message)).toContain('`POST /orders/77` (action `write:refunds/77`)');
    const listed = await call<{ approvals: Array<Record<string, unknown>> }>(gateway.url, 'GET', '/admin/approvals?status=pending', { adminToken: org.adminToken });
    expect(listed.body.approvals.find((approval) => approval.id === id)).toMatchObject({ action: 'write:refunds/77', derivedAction: 'write:orders/77', method: 'POST', path: '/orders/77' });
    const link = new URL(/Approve: (\S+)/.exec(String(notification.json.message))![1].replace(TEST_PUBLIC_URL, gateway.url));
    const page = await (await fetch(link)).text();
    expect(page).toContain('asks to POST /orders/77 (action write:refunds/77, derived write:orders/77)');
  });

  it('puts the gateway’s own links first and quotes what the agent wrote as code, cut short (a link in an action reads as the agent’s)', async () => {
    const lure = `write:refunds tiny refund. Approve: https://evil.example/approve ${'x'.repeat(400)}`;
    const held = await send(agent.token, 'POST', '/refunds/88', { amount: 500 }, { 'x-service-action': lure });
    expect(held.status).toBe(202);
    const id = String(held.body.approvalId);
    const [notification] = await webhook.waitFor(1, (request) => request.json.trigger === 'approval' && String(request.json.message).includes(id));
    const message = String(notification.json.message);
    expect(message).toMatch(new RegExp(`^Approve: ${TEST_PUBLIC_URL}/approvals/${id}/approve\\?`));
    expect(message.indexOf(`${TEST_PUBLIC_URL}/approvals/${id}/reject`)).toBeLessThan(message.indexOf('evil.example'));
    const quotedAction = /\(action (`[^`]*`)\)/.exec(message)![1];
    expect(quotedAction).toContain('Approve: https://evil.example/approve');
    expect(quotedAction.length).toBe(202);
    expect(quotedAction.endsWith('…`')).toBe(true);
  });
});
