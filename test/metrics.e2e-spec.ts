import type { ClientDuplexStream } from '@grpc/grpc-js';
import { GatewayProcess, gatewayReady, killGateway, launchGateway } from './support/gateway-process';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { apiKeyMetadata, evaluate, pdpClient, PdpClient } from './support/pdp-client';
import { freePort, eventually } from './support/processes';
import { PromSample, sampleValue, scrape } from './support/prometheus-text';
import { startGateway, TEST_ADMIN_TOKEN, testEnv } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * `GET /metrics` (docs/observability.md "Metrics") on the gateway as users start it
 * (`node dist/src/main.js`): on METRICS_PORT, a listener of its own, the counts move with the
 * traffic of every entry point; on the main port only behind METRICS_TOKEN.
 */

const EVALUATE = '/agentgov.pdp.v1.PolicyDecisionPoint/Evaluate';
const EVALUATE_STREAM = '/agentgov.pdp.v1.PolicyDecisionPoint/EvaluateStream';

let database: OwnDatabase;
let upstream: TestUpstream;
let gateway: GatewayProcess;
let metricsUrl: string;
let grpcPort: number;
let client: PdpClient;
let agent: { id: string; token: string };
let apiKey: string;

beforeAll(async () => {
  database = await ownDatabase();
  upstream = await startUpstream();
  const metricsPort = await freePort();
  grpcPort = await freePort();
  gateway = await launchGateway(testEnv({ DATABASE_URL: database.url, METRICS_PORT: String(metricsPort), PDP_GRPC_PORT: String(grpcPort), UPSTREAM_URL: upstream.url, LOG_LEVEL: 'info' }));
  await gatewayReady(gateway);
  metricsUrl = `http://127.0.0.1:${metricsPort}`;
  client = pdpClient(grpcPort);
  const created = await call<{ id: string; token: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: TEST_ADMIN_TOKEN, body: { name: 'metered-agent' } });
  expect(created.status).toBe(201);
  agent = created.body;
  const key = await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: TEST_ADMIN_TOKEN, body: { name: 'metrics test' } });
  expect(key.status).toBe(201);
  apiKey = key.body.key;
  const policy = ['name: no-secrets', 'rules:', '  - name: secrets', '    condition: action contains "secrets"', '    action: deny', '    reason: no secrets', ''].join('\n');
  const put = await call(gateway.url, 'PUT', '/admin/policies/no-secrets', { adminToken: TEST_ADMIN_TOKEN, body: policy, headers: { 'content-type': 'application/yaml' } });
  expect([200, 201]).toContain(put.status);
});

afterAll(async () => {
  client?.close();
  if (gateway) await killGateway(gateway);
  await upstream?.close();
  await database?.dispose();
});

/** How much each sample grew between two scrapes (absent before: from 0). */
function growth(before: PromSample[], after: PromSample[], name: string, labels: Record<string, string> = {}): number {
  return (sampleValue(after, name, labels) ?? 0) - (sampleValue(before, name, labels) ?? 0);
}

it('counts the decisions of every entry point by result, the requests by route and status, and times them', async () => {
  const before = await scrape(metricsUrl);

  for (let i = 0; i < 3; i++) {
    const check = await call(gateway.url, 'POST', '/v1/check', { body: { agentId: agent.id, plugin: 'FilePlugin', function: 'ReadFile' }, headers: { 'x-api-key': apiKey } });
    expect(check.status).toBe(200);
  }
  for (const path of ['/api/items', '/api/items']) expect((await call(gateway.url, 'GET', `/proxy${path}`, { bearer: agent.token })).status).toBe(200);
  expect((await call(gateway.url, 'GET', '/proxy/secrets', { bearer: agent.token })).status).toBe(403);
  expect((await call(gateway.url, 'GET', '/proxy/api/items', { bearer: 'not-a-token' })).status).toBe(401);
  expect(await evaluate(client, apiKey, { agentId: agent.id, plugin: 'FilePlugin', function: 'ReadFile' })).toMatchObject({ decision: 'DECISION_ALLOW' });
  await expect(evaluate(client, 'agk_wrong', { agentId: agent.id, plugin: 'FilePlugin', function: 'ReadFile' })).rejects.toMatchObject({ code: 16 });

  let after: PromSample[] = [];
  await eventually(async () => {
    after = await scrape(metricsUrl);
    return growth(before, after, 'agentgov_audit_entries_written_total') >= 6;
  }, 10_000, 'the decisions written to the audit trail');

  expect({
    checkAllowed: growth(before, after, 'agentgov_decisions_total', { source: 'check', result: 'allow' }),
    proxyAllowed: growth(before, after, 'agentgov_decisions_total', { source: 'proxy', result: 'allow' }),
    proxyDenied: growth(before, after, 'agentgov_decisions_total', { source: 'proxy', result: 'deny' }),
    pdpAllowed: growth(before, after, 'agentgov_decisions_total', { source: 'pdp', result: 'allow' }),
    checkRequests: growth(before, after, 'agentgov_http_requests_total', { route: '/v1/check', method: 'POST', status: '200' }),
    proxied: growth(before, after, 'agentgov_http_requests_total', { route: '/proxy/*', method: 'GET', status: '200' }),
    proxyRefused: growth(before, after, 'agentgov_http_requests_total', { route: '/proxy/*', method: 'GET', status: '403' }),
    proxyUnauthenticated: growth(before, after, 'agentgov_http_requests_total', { route: '/proxy/*', method: 'GET', status: '401' }),
    grpcOk: growth(before, after, 'agentgov_grpc_requests_total', { method: EVALUATE, code: 'OK' }),
    grpcUnauthenticated: growth(before, after, 'agentgov_grpc_requests_total', { method: EVALUATE, code: 'UNAUTHENTICATED' }),
    proxyTimed: growth(before, after, 'agentgov_proxy_duration_seconds_count'),
    checkTimed: growth(before, after, 'agentgov_decision_duration_seconds_count', { source: 'check' }),
  }).toEqual({
    checkAllowed: 3,
    proxyAllowed: 2,
    proxyDenied: 1,
    pdpAllowed: 1,
    checkRequests: 3,
    proxied: 2,
    proxyRefused: 1,
    proxyUnauthenticated: 1,
    grpcOk: 1,
    grpcUnauthenticated: 1,
    proxyTimed: 3,
    checkTimed: 3,
  });
  // Express's routes are counted under their pattern, never the path the caller sent.
  const routes = after.filter((sample) => sample.name === 'agentgov_http_requests_total').map((sample) => sample.labels.route);
  expect(routes).toContain('/admin/policies/:name');
  expect(routes.filter((route) => route.includes('no-secrets') || route.includes('/api/items'))).toEqual([]);
  expect(sampleValue(after, 'agentgov_audit_pending_entries')).toEqual(expect.any(Number));
  expect(sampleValue(after, 'agentgov_audit_oldest_pending_seconds')).toEqual(expect.any(Number));
  expect(sampleValue(after, 'agentgov_audit_write_failures_total')).toBe(0);
  expect(growth(before, after, 'agentgov_audit_write_duration_seconds_count')).toBeGreaterThan(0);
  expect(sampleValue(after, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  // LOG_REQUESTS is off by default: no request log lines for all that traffic.
  expect(gateway.output().stdout).not.toContain('"level":"access"');
});

it('shows the PDP streams open', async () => {
  const stream: ClientDuplexStream<object, Record<string, unknown>> = client.EvaluateStream(apiKeyMetadata(apiKey));
  const answered = new Promise<Record<string, unknown>>((resolve, reject) => stream.once('data', resolve).once('error', reject));
  stream.write({ agentId: agent.id, plugin: 'FilePlugin', function: 'ReadFile' });
  expect(await answered).toMatchObject({ decision: 'DECISION_ALLOW' });
  expect(sampleValue(await scrape(metricsUrl), 'agentgov_pdp_streams_open', { method: EVALUATE_STREAM })).toBe(1);

  const ended = new Promise<void>((resolve) => stream.once('status', () => resolve()));
  stream.end();
  stream.resume();
  await ended;
  await eventually(async () => sampleValue(await scrape(metricsUrl), 'agentgov_pdp_streams_open', { method: EVALUATE_STREAM }) === 0, 5000, 'the stream counted as closed');
});

it('serves only /metrics on METRICS_PORT, and no metrics on the main port without METRICS_TOKEN', async () => {
  expect((await call(metricsUrl, 'GET', '/health')).status).toBe(404);
  expect((await call(gateway.url, 'GET', '/metrics')).status).toBe(404);
});

describe('METRICS_TOKEN without METRICS_PORT', () => {
  it('serves /metrics on the main port to the bearer of the token only', async () => {
    const token = 'metrics-token-0123456789abcdef';
    const other = await startGateway({ DATABASE_URL: database.url, METRICS_TOKEN: token });
    try {
      const anonymous = await call(other.url, 'GET', '/metrics');
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(anonymous.body).toMatchObject({ error: 'unauthorized' });
      expect((await call(other.url, 'GET', '/metrics', { bearer: 'metrics-token-0123456789abcdeX' })).status).toBe(401);
      expect((await call(other.url, 'GET', '/metrics', { adminToken: TEST_ADMIN_TOKEN })).status).toBe(401);
      const samples = await scrape(other.url, { authorization: `Bearer ${token}` });
      expect(sampleValue(samples, 'agentgov_http_requests_total', { route: '/metrics', method: 'GET', status: '401' })).toBe(3);
    } finally {
      await other.close();
    }
  });
});
