import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GovernanceClient, PolicyDeniedError } from '../sdk/typescript/src';
import { call, TestResponse } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { freePort, GATEWAY_MAIN, launch, ServiceProcess, SIDECAR_MAIN, waitFor } from './support/processes';
import { testDatabaseKind } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * Approvals at the edge (docs/approvals.md "The sidecar"): the built gateway and the built
 * sidecar as separate processes. A request through the sidecar that a `require_approval` rule
 * holds is answered 202 with an approval the gateway opened; once an admin approves it there,
 * the identical retry through the sidecar reaches the upstream, once; with the gateway down the
 * sidecar denies, saying why, since nobody could approve.
 */

const ADMIN_TOKEN = 'sidecar-approvals-admin-token-0123456789';
const POLICIES = `policies:
  - name: edge-refunds
    match: { action: "write:refunds*" }
    rules:
      - condition: args.amount > 100
        action: require_approval
        reason: Refunds over 100 need a person
  - name: edge-payments
    match: { plugin: PaymentsPlugin, function: Refund }
    rules:
      - condition: args.amount > 100
        action: require_approval
        reason: Payments over 100 need a person
`;

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sidecar-approvals-'));
let database: OwnDatabase | undefined;
let upstream: TestUpstream;
let gateway: ServiceProcess;
let sidecar: ServiceProcess;
let agent: { id: string; token: string };
let apiKey: string;

const admin = <T = Record<string, unknown>>(method: string, route: string, body?: unknown) => call<T>(gateway.url, method, route, { adminToken: ADMIN_TOKEN, body });

function refund(amount: number, approvalId?: string): Promise<TestResponse> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (approvalId !== undefined) headers['x-service-approval'] = approvalId;
  return call(sidecar.url, 'POST', '/proxy/refunds/7', { bearer: agent.token, body: JSON.stringify({ amount }), headers });
}

beforeAll(async () => {
  fs.writeFileSync(path.join(scratch, 'policies.yaml'), POLICIES);
  if (testDatabaseKind() === 'postgres') database = await ownDatabase();
  upstream = await startUpstream();
  const gatewayPort = await freePort();
  gateway = launch(GATEWAY_MAIN, gatewayPort, {
    ADMIN_TOKEN,
    PUBLIC_URL: 'http://gateway.approvals.test',
    PDP_GRPC_PORT: '0',
    POLICIES_FILE: path.join(scratch, 'policies.yaml'),
    SIGNING_KEY_FILE: path.join(scratch, 'signing-key.pem'),
    UPSTREAM_URL: upstream.url,
    AUDIT_FLUSH_MS: '10',
    LOG_LEVEL: 'warn',
    ...(database ? { DATABASE_URL: database.url } : { DATA_DIR: path.join(scratch, 'data') }),
  });
  await waitFor(gateway, '/health', (status) => status === 200, 90_000);
  const created = await admin<{ id: string; token: string }>('POST', '/admin/agents', { name: 'edge-refunder', trustTier: 'verified' });
  expect(created.status).toBe(201);
  agent = created.body;
  apiKey = (await admin<{ key: string }>('POST', '/admin/api-keys', { name: 'edge-adapter' })).body.key;
  // The sidecar runs as deployed: on a sidecar token of its organization, not the admin token.
  const sidecarToken = await admin<{ token: string }>('POST', '/admin/sidecar-tokens', { name: 'approvals-edge' });
  expect(sidecarToken.status).toBe(201);
  sidecar = launch(SIDECAR_MAIN, await freePort(), {
    GATEWAY_URL: gateway.url,
    ADMIN_TOKEN: sidecarToken.body.token,
    CACHE_DIR: path.join(scratch, 'cache'),
    BUNDLE_SYNC_INTERVAL: '1',
    AUDIT_FORWARD_INTERVAL_MS: '100',
    UPSTREAM_URL: upstream.url,
    SIDECAR_ID: 'sc_approvals-edge',
    LOG_LEVEL: 'warn',
  });
  await waitFor(sidecar, '/health', (status, body) => status === 200 && (body.cachedAgents as number) >= 1);
}, 240_000);

afterAll(async () => {
  await sidecar?.kill();
  await gateway?.kill();
  await upstream?.close();
  await database?.dispose();
  fs.rmSync(scratch, { recursive: true, force: true });
}, 60_000);

describe('require_approval through the sidecar', () => {
  it('answers 202 with an approval opened at the gateway, and lets the identical retry through once an admin approves it, once', async () => {
    const held = await refund(500);
    expect(held.status).toBe(202);
    expect(held.headers.get('x-service-decision')).toBe('pending');
    expect(held.body).toMatchObject({ error: 'approval_required', approvalId: expect.stringMatching(/^appr_/), expiresAt: expect.any(String) });
    const id = String(held.body.approvalId);
    expect(upstream.received('/refunds/7')).toHaveLength(0);

    const pending = await admin<{ approvals: Array<Record<string, unknown>> }>('GET', '/admin/approvals?status=pending');
    expect(pending.body.approvals).toContainEqual(expect.objectContaining({ id, agentId: agent.id, action: 'write:refunds/7', status: 'pending' }));
    const early = await refund(500, id);
    expect([early.status, early.body.reason]).toEqual([403, `Approval ${id} is still waiting for a person`]);

    expect((await admin('POST', `/admin/approvals/${id}/approve`, { comment: 'ok' })).status).toBe(200);
    const otherBody = await refund(900, id);
    expect([otherBody.status, otherBody.body.reason]).toEqual([403, `Approval ${id} was asked for another request (its body, arguments, resource or context differ)`]);
    const approved = await refund(500, id);
    expect(approved.status).toBe(200);
    expect(upstream.received('/refunds/7')).toHaveLength(1);
    expect(upstream.received('/refunds/7')[0].headers['x-service-approval']).toBeUndefined();
    const again = await refund(500, id);
    expect([again.status, again.body.reason]).toEqual([403, `Approval ${id} was already used: an approval lets one request through`]);
    expect(upstream.received('/refunds/7')).toHaveLength(1);
    expect((await admin<{ approvals: Array<Record<string, unknown>> }>('GET', '/admin/approvals?status=used')).body.approvals).toContainEqual(expect.objectContaining({ id }));
  });

  it('answers /enforce for an action a require_approval rule holds 202 pending with the approval, and lets the approved retry with approvalId through once', async () => {
    const enforce = (body: Record<string, unknown>) => call(sidecar.url, 'POST', '/enforce', { bearer: agent.token, body: { agentId: agent.id, action: 'write:refunds/9', ...body } });
    const held = await enforce({ context: { args: { amount: 700 } } });
    expect(held.status).toBe(202);
    expect(held.body).toMatchObject({ decision: 'pending', policy: 'edge-refunds', reason: 'Refunds over 100 need a person', approvalId: expect.stringMatching(/^appr_/), expiresAt: expect.any(String) });
    const id = String(held.body.approvalId);
    expect((await enforce({ context: { args: { amount: 700 } }, approvalId: 42 })).status).toBe(400);

    expect((await admin('POST', `/admin/approvals/${id}/approve`, { comment: 'ok' })).status).toBe(200);
    const otherArgs = await enforce({ context: { args: { amount: 900 } }, approvalId: id });
    expect([otherArgs.status, otherArgs.body.decision, otherArgs.body.reason]).toEqual([200, 'deny', `Approval ${id} was asked for another request (its body, arguments, resource or context differ)`]);
    const approved = await enforce({ context: { args: { amount: 700 } }, approvalId: id });
    expect([approved.status, approved.body.decision]).toEqual([200, 'allow']);
    const again = await enforce({ context: { args: { amount: 700 } }, approvalId: id });
    expect([again.status, again.body.decision, again.body.reason]).toEqual([200, 'deny', `Approval ${id} was already used: an approval lets one request through`]);
  });

  it('lets an SDK pointed at the sidecar wait in guard() (GET /v1/approvals/:id through the sidecar) and run the call once approved', async () => {
    const governance = await GovernanceClient.create({
      gatewayUrl: sidecar.url,
      grpcAddress: `127.0.0.1:${await freePort()}`,
      apiKey,
      agentId: agent.id,
      auditLogPath: path.join(scratch, 'sdk-audit.wal'),
      cache: false,
    });
    try {
      let runs = 0;
      const guarded = governance.guard('PaymentsPlugin', 'Refund', { amount: 250 }, () => (runs += 1));
      let pending: Record<string, unknown> | undefined;
      for (let tries = 0; pending === undefined && tries < 200; tries += 1) {
        const listed = await admin<{ approvals: Array<Record<string, unknown>> }>('GET', '/admin/approvals?status=pending');
        pending = listed.body.approvals.find((approval) => approval.action === 'PaymentsPlugin.Refund');
        if (pending === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const id = String(pending!.id);
      const status = await call(sidecar.url, 'GET', `/v1/approvals/${id}`, { headers: { 'x-api-key': apiKey } });
      expect([status.status, status.body]).toEqual([200, { id, status: 'pending', expiresAt: pending!.expiresAt }]);
      expect((await call(sidecar.url, 'GET', `/v1/approvals/${id}`, { headers: { 'x-api-key': 'agk_wrong' } })).status).toBe(401);
      expect((await call(sidecar.url, 'GET', '/v1/approvals/appr_000000000000000000000000', { headers: { 'x-api-key': apiKey } })).status).toBe(404);
      expect(runs).toBe(0);

      await admin('POST', `/admin/approvals/${id}/approve`, {});
      expect(await guarded).toBe(1);
      expect(runs).toBe(1);
      const used = await call(sidecar.url, 'GET', `/v1/approvals/${id}`, { headers: { 'x-api-key': apiKey } });
      expect(used.body.status).toBe('used');
    } finally {
      await governance.close();
    }
  });

  it('denies (403) a request a require_approval rule holds while the gateway is down, saying nobody could approve it', async () => {
    const held = await refund(300);
    expect(held.status).toBe(202);
    const openedBefore = String(held.body.approvalId);
    await gateway.kill();

    const denied = await refund(400);
    expect(denied.status).toBe(403);
    expect(denied.headers.get('x-service-decision')).toBe('deny');
    expect(denied.body.reason).toBe('Approval needed, but the gateway cannot be reached: approvals are asked at the gateway (docs/approvals.md)');
    const retried = await refund(300, openedBefore);
    expect(retried.status).toBe(403);
    expect(retried.body.reason).toMatch(new RegExp(`^Approval ${openedBefore} cannot be checked: .*the gateway cannot be reached`));
    // A request no require_approval rule holds is still decided at the edge.
    expect((await refund(50)).status).toBe(200);
    const status = await call(sidecar.url, 'GET', `/v1/approvals/${openedBefore}`, { headers: { 'x-api-key': apiKey } });
    expect([status.status, status.body.message]).toEqual([503, 'The gateway cannot be reached: approvals are kept at the gateway (docs/approvals.md)']);
    const governance = await GovernanceClient.create({ gatewayUrl: sidecar.url, grpcAddress: `127.0.0.1:${await freePort()}`, apiKey, agentId: agent.id, auditLogPath: path.join(scratch, 'sdk-audit-down.wal'), cache: false });
    try {
      const error = await governance.guard('PaymentsPlugin', 'Refund', { amount: 260 }, () => 'ran').then(
        () => new Error('guard resolved'),
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(PolicyDeniedError);
      expect((error as PolicyDeniedError).result.reason).toBe('Approval needed, but the gateway cannot be reached: approvals are asked at the gateway (docs/approvals.md)');
    } finally {
      await governance.close();
    }
    expect(upstream.received('/refunds/7').map((request) => JSON.parse(request.body.toString()) as { amount: number })).toEqual([{ amount: 500 }, { amount: 50 }]);
  });
});
