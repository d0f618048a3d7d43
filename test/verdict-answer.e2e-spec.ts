import { call } from './support/http-client';
import { auditEntries, createAgent } from './support/org-fixtures';
import { evaluate, freePort, pdpClient, PdpClient } from './support/pdp-client';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * One verdict, one answer on every transport (src/core/decision/verdict-answer.ts): a
 * `require_approval` rule whose condition is a tripped `rate_limit` holds the request for a
 * person (202, an approval opened) at the proxy, /v1/check and gRPC alike, and its entry says
 * 202. It is not a "try again later" 429: the approval it opened would never reach the caller.
 */

const POLICIES: Array<[string, string]> = [
  ['proxy-refunds', 'name: proxy-refunds\nmatch: { action: "write:refunds*" }\nrules:\n  - condition: rate_limit(per_agent, 1, 1m)\n    action: require_approval\n    reason: A second refund within a minute needs a person\n'],
  ['pdp-refunds', 'name: pdp-refunds\nmatch: { plugin: Payments, function: Refund }\nrules:\n  - condition: rate_limit(per_agent, 1, 1m)\n    action: require_approval\n    reason: A second refund within a minute needs a person\n'],
];

let upstream: TestUpstream;
let gateway: TestGateway;
let org: TestOrganization;
let apiKey: string;
let pdp: PdpClient;

beforeAll(async () => {
  upstream = await startUpstream();
  const grpcPort = await freePort();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url, PDP_GRPC_PORT: String(grpcPort) });
  pdp = pdpClient(grpcPort);
  org = await createOrganization(gateway, 'enterprise', 'Verdict answer org');
  for (const [name, yaml] of POLICIES) {
    const put = await call(gateway.url, 'PUT', `/admin/policies/${name}`, { adminToken: org.adminToken, body: yaml, headers: { 'content-type': 'application/yaml' } });
    expect([200, 201]).toContain(put.status);
  }
  apiKey = (await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'verdict answer' } })).body.key;
});

afterAll(async () => {
  pdp.close();
  await gateway.close();
  await upstream.close();
});

it('holds a request over a rate limit of a require_approval rule with 202 at the proxy, /v1/check and gRPC, recorded as 202', async () => {
  const viaProxy = await createAgent(gateway, org, { name: 'proxy-refunder' });
  const refund = () => call(gateway.url, 'POST', '/proxy/refunds/42', { bearer: viaProxy.token, body: '{}', headers: { 'content-type': 'application/json' } });
  expect((await refund()).status).toBe(200);
  const heldAtProxy = await refund();
  expect([heldAtProxy.status, heldAtProxy.body.error]).toEqual([202, 'approval_required']);

  const viaCheck = await createAgent(gateway, org, { name: 'check-refunder' });
  const check = () => call(gateway.url, 'POST', '/v1/check', { headers: { 'x-api-key': apiKey }, body: { agentId: viaCheck.id, plugin: 'Payments', function: 'Refund' } });
  expect((await check()).body.decision).toBe('allow');
  const heldAtCheck = await check();
  expect([heldAtCheck.status, heldAtCheck.body.decision, heldAtCheck.body.approvalId]).toEqual([202, 'pending', expect.stringMatching(/^appr_/)]);

  const viaGrpc = await createAgent(gateway, org, { name: 'grpc-refunder' });
  const request = { agentId: viaGrpc.id, plugin: 'Payments', function: 'Refund' };
  expect(await evaluate(pdp, apiKey, request)).toMatchObject({ decision: 'DECISION_ALLOW' });
  expect(await evaluate(pdp, apiKey, request)).toMatchObject({ decision: 'DECISION_PENDING', approvalId: expect.stringMatching(/^appr_/) });

  for (const agent of [viaProxy, viaCheck, viaGrpc]) {
    const [held] = await auditEntries(gateway, org, `agentId=${agent.id}&decision=deny`, 1);
    expect(held).toMatchObject({ status: 202, rateLimited: true });
  }
});
