import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { AlertReceiver, startAlertReceiver } from './support/alert-receivers';
import { call, TestResponse } from './support/http-client';
import { startMcpUpstream, TestMcpServer } from './support/mcp-upstream';
import { auditEntries, createAgent, TestAgent } from './support/org-fixtures';
import { evaluate, freePort, pdpClient, PdpClient, struct } from './support/pdp-client';
import { createOrganization, startGateway, TEST_PUBLIC_URL, testEnv, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * Human approvals (docs/approvals.md): a `require_approval` rule holds a request and answers at
 * once; a person approves or rejects it; the agent's retry of that very request goes through,
 * once.
 */

const POLICIES: Array<[string, string]> = [
  ['big-refunds', 'name: big-refunds\nmatch: { action: "write:refunds*" }\nrules:\n  - condition: args.amount > 100\n    action: require_approval\n    approvers: [finance]\n    reason: Refunds over 100 need a person\n'],
  ['quick-expiry', 'name: quick-expiry\nmatch: { action: "write:quick*" }\nrules:\n  - condition: agent.trust_tier < privileged\n    action: require_approval\n    timeout: 1s\n    reason: Quick things need a person quickly\n'],
  ['pdp-payments', 'name: pdp-payments\nmatch: { plugin: Payments, function: Refund }\nrules:\n  - condition: args.amount > 100\n    action: require_approval\n    reason: Refunds over 100 need a person\n'],
  ['mcp-payments', 'name: mcp-payments\nmatch: { plugin: pay, function: refund }\nrules:\n  - condition: args.amount > 100\n    action: require_approval\n    reason: Refunds over 100 need a person\n'],
];

const CLI = path.resolve(__dirname, '../dist/src/cli/main.js');

let upstream: TestUpstream;
let mcpUpstream: TestMcpServer;
let webhook: AlertReceiver;
let gateway: TestGateway;
let org: TestOrganization;
let agent: TestAgent;
let other: TestAgent;
let apiKey: string;
let grpcPort: number;
let pdp: PdpClient;
let scratch: string;

beforeAll(async () => {
  upstream = await startUpstream();
  mcpUpstream = await startMcpUpstream([{ name: 'refund', description: 'Refunds', inputSchema: { type: 'object', properties: { amount: { type: 'number' } } } }]);
  webhook = await startAlertReceiver();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-approvals-'));
  fs.writeFileSync(path.join(scratch, 'mcp.yaml'), `servers:\n  - name: pay\n    url: ${mcpUpstream.url}\n`);
  grpcPort = await freePort();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url, ALERT_WEBHOOK_URL: webhook.url, MCP_SERVERS: path.join(scratch, 'mcp.yaml'), PDP_GRPC_PORT: String(grpcPort) });
  pdp = pdpClient(grpcPort);
  org = await createOrganization(gateway, 'enterprise', 'Approvals org');
  for (const [name, yaml] of POLICIES) {
    const put = await call(gateway.url, 'PUT', `/admin/policies/${name}`, { adminToken: org.adminToken, body: yaml, headers: { 'content-type': 'application/yaml' } });
    expect([200, 201]).toContain(put.status);
  }
  agent = await createAgent(gateway, org, { name: 'refund-bot', trustTier: 'verified' });
  other = await createAgent(gateway, org, { name: 'other-bot', trustTier: 'verified' });
  apiKey = (await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'approvals' } })).body.key;
});

afterAll(async () => {
  pdp.close();
  await gateway.close();
  await Promise.all([upstream.close(), mcpUpstream.close(), webhook.close()]);
  fs.rmSync(scratch, { recursive: true, force: true });
});

function refund(token: string, amount: number, approvalId?: string, note = 'r'): Promise<TestResponse> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (approvalId !== undefined) headers['x-service-approval'] = approvalId;
  return call(gateway.url, 'POST', '/proxy/refunds/42', { bearer: token, body: JSON.stringify({ amount, note }), headers });
}

function decide(id: string, verdict: 'approve' | 'reject', adminToken = org.adminToken, comment = 'checked'): Promise<TestResponse> {
  return call(gateway.url, 'POST', `/admin/approvals/${id}/${verdict}`, { adminToken, body: { comment } });
}

describe('through the proxy', () => {
  it('holds the request (202), lets its very retry through once an admin approves, once, and records who decided', async () => {
    const before = upstream.received('/refunds/42').length;
    const held = await refund(agent.token, 500);
    expect(held.status).toBe(202);
    expect(held.headers.get('x-service-decision')).toBe('pending');
    expect(held.body).toMatchObject({ error: 'approval_required', approvalId: expect.stringMatching(/^appr_/), expiresAt: expect.any(String), message: expect.stringContaining('X-Service-Approval') });
    const id = String(held.body.approvalId);
    expect(upstream.received('/refunds/42').length).toBe(before);

    const listed = await call<{ approvals: Array<Record<string, unknown>> }>(gateway.url, 'GET', '/admin/approvals?status=pending', { adminToken: org.adminToken });
    expect(listed.body.approvals).toContainEqual(expect.objectContaining({ id, status: 'pending', agentId: agent.id, action: 'write:refunds/42', approvers: ['finance'] }));
    // Before anyone decides, the retry still waits.
    expect((await refund(agent.token, 500, id)).body.reason).toBe(`Approval ${id} is still waiting for a person`);

    expect((await decide(id, 'approve')).body).toMatchObject({ id, status: 'approved', comment: 'checked', decidedBy: expect.any(String) });
    // Another body, another agent: refused, and the approval is not spent.
    const otherBody = await refund(agent.token, 900, id);
    expect([otherBody.status, otherBody.body.reason]).toEqual([403, `Approval ${id} was asked for another request (its body, arguments, resource or context differ)`]);
    const otherAgent = await refund(other.token, 500, id);
    expect([otherAgent.status, otherAgent.body.reason]).toEqual([403, `Approval ${id} was asked for another agent`]);

    const approved = await refund(agent.token, 500, id);
    expect(approved.status).toBe(200);
    expect(upstream.received('/refunds/42').length).toBe(before + 1);
    expect(upstream.received('/refunds/42').at(-1)!.headers['x-service-approval']).toBeUndefined();
    const again = await refund(agent.token, 500, id);
    expect([again.status, again.body.reason]).toEqual([403, `Approval ${id} was already used: an approval lets one request through`]);

    const [event] = await auditEntries(gateway, org, 'action=admin:approval.approve', 1);
    expect(event.details).toMatchObject({ approvalId: id, requestAction: 'write:refunds/42', comment: 'checked' });
    const decisions = await auditEntries(gateway, org, `agentId=${agent.id}&source=proxy`, 6);
    expect(decisions.filter((entry) => (entry.details as { approvalId?: string } | null)?.approvalId === id).map((entry) => entry.status)).toEqual(expect.arrayContaining([202, 200]));
  });

  it('denies the retry of a rejected request, and answers an approval of another organization 404', async () => {
    const held = await refund(agent.token, 300);
    const id = String(held.body.approvalId);
    const stranger = await createOrganization(gateway, 'enterprise', 'Stranger approvals org');
    expect((await decide(id, 'approve', stranger.adminToken)).status).toBe(404);
    expect((await call<{ approvals: unknown[] }>(gateway.url, 'GET', '/admin/approvals', { adminToken: stranger.adminToken })).body.approvals).toEqual([]);
    expect((await decide(id, 'reject', org.adminToken, 'not today')).body).toMatchObject({ status: 'rejected', comment: 'not today' });
    expect((await decide(id, 'approve')).status).toBe(409);
    const retried = await refund(agent.token, 300, id);
    expect(retried.status).toBe(403);
    expect(retried.body.reason).toMatch(new RegExp(`^Approval ${id} was rejected by `));
  });

  it('lets an approval expire: too late to approve, and its retry is denied', async () => {
    const held = await call(gateway.url, 'POST', '/proxy/quick/1', { bearer: agent.token });
    expect(held.status).toBe(202);
    const id = String(held.body.approvalId);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await decide(id, 'approve')).status).toBe(409);
    expect((await call(gateway.url, 'GET', '/admin/approvals?status=expired', { adminToken: org.adminToken })).body.approvals).toContainEqual(expect.objectContaining({ id, status: 'expired' }));
    const retried = await call(gateway.url, 'POST', '/proxy/quick/1', { bearer: agent.token, headers: { 'x-service-approval': id } });
    expect([retried.status, retried.body.reason]).toEqual([403, `Approval ${id} has expired`]);
  });
});

describe('the notification’s signed links', () => {
  it('approve once, only with the link’s signature, from a page that asks to confirm', async () => {
    const held = await refund(agent.token, 250, undefined, 'link');
    const id = String(held.body.approvalId);
    const [notification] = await webhook.waitFor(1, (request) => request.json.trigger === 'approval' && String(request.json.message).includes(id));
    expect(notification.json).toMatchObject({ trigger: 'approval', entry: { decision: 'pending', policyName: 'big-refunds' } });
    const approveUrl = /Approve: (\S+)/.exec(String(notification.json.message))![1].replace(TEST_PUBLIC_URL, gateway.url);
    const url = new URL(approveUrl);

    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<form method="post">');
    // A GET changes nothing (chat previews fetch links).
    expect((await call(gateway.url, 'GET', `/admin/approvals?status=pending`, { adminToken: org.adminToken })).body.approvals).toContainEqual(expect.objectContaining({ id }));

    const form = (token: string) =>
      fetch(`${url.origin}${url.pathname}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ expires: url.searchParams.get('expires')!, token }) });
    const forged = await form(`${url.searchParams.get('token')!.slice(0, -2)}xx`);
    expect(await forged.text()).toContain('The link is not valid');
    const first = await form(url.searchParams.get('token')!);
    expect(await first.text()).toContain('Approved');
    const second = await form(url.searchParams.get('token')!);
    expect(await second.text()).toContain('can no longer be decided');
    expect((await refund(agent.token, 250, id, 'link')).status).toBe(200);
  });
});

describe('through /v1/check, the PDP and MCP', () => {
  const check = (body: Record<string, unknown>) => call(gateway.url, 'POST', '/v1/check', { headers: { 'x-api-key': apiKey }, body });

  it('answers /v1/check 202 with the approval, then allow for the identical retry once approved, and deny for other arguments, context or resource', async () => {
    const ask = { agentId: agent.id, plugin: 'Payments', function: 'Refund', arguments: { amount: 500, order: 'o-1' } };
    const held = await check(ask);
    expect(held.status).toBe(202);
    expect(held.body).toMatchObject({ error: 'approval_required', decision: 'pending', policy: 'pdp-payments' });
    const id = String(held.body.approvalId);
    await decide(id, 'approve');
    expect((await check({ ...ask, arguments: { amount: 500, order: 'o-2' }, approvalId: id })).body.decision).toBe('deny');
    // Approved for one customer and resource: the same arguments about another are another request.
    const otherContext = await check({ ...ask, context: { customer: 'c-2' }, approvalId: id });
    expect([otherContext.body.decision, otherContext.body.reason]).toEqual(['deny', `Approval ${id} was asked for another request (its body, arguments, resource or context differ)`]);
    expect((await check({ ...ask, resource: 'account:2', approvalId: id })).body.decision).toBe('deny');
    expect((await check({ ...ask, approvalId: id })).body).toMatchObject({ decision: 'allow', reason: expect.stringContaining(`(${id})`) });
    expect((await check({ ...ask, approvalId: id })).body.decision).toBe('deny');
  });

  it('answers a pending decision over gRPC, with the approval id and its expiry', async () => {
    const request = { agentId: agent.id, plugin: 'Payments', function: 'Refund', args: struct({ amount: 700 }) };
    const held = await evaluate(pdp, apiKey, request);
    expect(held).toMatchObject({ decision: 'DECISION_PENDING', approvalId: expect.stringMatching(/^appr_/), approvalExpiresAt: expect.any(String) });
    await decide(String(held.approvalId), 'approve');
    expect(await evaluate(pdp, apiKey, { ...request, approvalId: held.approvalId })).toMatchObject({ decision: 'DECISION_ALLOW' });
  });

  it('answers an MCP tools/call with a JSON-RPC error carrying the approval, and forwards the approved retry', async () => {
    const client = new Client({ name: 'e2e-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/pay`), { requestInit: { headers: { authorization: `Bearer ${agent.token}` } } }));
    const error = await client.callTool({ name: 'refund', arguments: { amount: 400 } }).then(
      () => new Error('allowed'),
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32010);
    const data = (error as McpError).data as Record<string, unknown>;
    expect(data).toMatchObject({ error: 'approval_required', approvalId: expect.stringMatching(/^appr_/), policy: 'mcp-payments' });
    await decide(String(data.approvalId), 'approve');
    const result = await client.callTool({ name: 'refund', arguments: { amount: 400 }, _meta: { approvalId: data.approvalId } });
    expect(result.isError).not.toBe(true);
    expect(mcpUpstream.calls.at(-1)).toMatchObject({ name: 'refund', arguments: { amount: 400 } });
    await client.close();
  });
});

describe('ags approvals', () => {
  it('lists, approves and rejects from the command line', async () => {
    const first = String((await refund(agent.token, 150, undefined, 'cli-1')).body.approvalId);
    const second = String((await refund(agent.token, 160, undefined, 'cli-2')).body.approvalId);
    const listed = await ags('approvals', 'list', '--org', org.id, '--status', 'pending');
    expect(listed.stdout).toContain(first);
    const approved = await ags('approvals', 'approve', first, '--comment', 'ok by phone');
    expect(approved).toMatchObject({ code: 0, stderr: '' });
    expect(approved.stdout).toMatch(/status: approved/);
    expect((await ags('approvals', 'reject', second)).stdout).toMatch(/status: rejected/);
    expect((await refund(agent.token, 150, first, 'cli-1')).status).toBe(200);
  });
});

function ags(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...testEnv() }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
  });
}
