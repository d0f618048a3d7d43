import { GatewayProcess, killGateway, launchGateway } from './support/gateway-process';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { evaluate, pdpClient, PdpClient } from './support/pdp-client';
import { eventually, freePort } from './support/processes';
import { TEST_ADMIN_TOKEN, testEnv } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * The gateway's logs an operator reads (docs/observability.md "Logs"), on the gateway as users
 * start it: with LOG_REQUESTS one line at level `access` per proxied and PDP request (HTTP and
 * gRPC), whatever LOG_LEVEL says, without the query string; and a warning for any request
 * answered slower than SLOW_REQUEST_MS.
 */

const SLOW_REQUEST_MS = 300;

let database: OwnDatabase;
let upstream: TestUpstream;
let gateway: GatewayProcess;
let client: PdpClient;
let agent: { id: string; token: string };
let apiKey: string;

beforeAll(async () => {
  database = await ownDatabase();
  upstream = await startUpstream();
  const grpcPort = await freePort();
  gateway = await launchGateway(
    testEnv({ DATABASE_URL: database.url, UPSTREAM_URL: upstream.url, PDP_GRPC_PORT: String(grpcPort), LOG_REQUESTS: 'true', SLOW_REQUEST_MS: String(SLOW_REQUEST_MS), LOG_LEVEL: 'warn' }),
  );
  // LOG_LEVEL=warn leaves out the `gateway listening` line gatewayReady waits for.
  await eventually(async () => (await call(gateway.url, 'GET', '/health').catch(() => null))?.status === 200, 45_000, 'the gateway answering');
  client = pdpClient(grpcPort);
  const created = await call<{ id: string; token: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: TEST_ADMIN_TOKEN, body: { name: 'logged-agent' } });
  expect(created.status).toBe(201);
  agent = created.body;
  const key = await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: TEST_ADMIN_TOKEN, body: { name: 'request logs' } });
  expect(key.status).toBe(201);
  apiKey = key.body.key;
});

afterAll(async () => {
  client?.close();
  if (gateway) await killGateway(gateway);
  await upstream?.close();
  await database?.dispose();
});

function logLines(): Array<Record<string, unknown>> {
  return gateway
    .output()
    .stdout.split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function accessLines(traceId: string): Array<Record<string, unknown>> {
  return logLines().filter((line) => line.level === 'access' && line.traceId === traceId);
}

it('writes one access line per proxied request, at LOG_LEVEL=warn, without the query string', async () => {
  const answered = await call(gateway.url, 'GET', '/proxy/api/items?token=s3cr3t-value&page=2', { bearer: agent.token, headers: { 'x-trace-id': 'logs-proxy-1' } });
  expect(answered.status).toBe(200);
  const refused = await call(gateway.url, 'GET', '/proxy/api/items', { headers: { 'x-trace-id': 'logs-proxy-2' } });
  expect(refused.status).toBe(401);
  await eventually(async () => accessLines('logs-proxy-2').length === 1, 5000, 'the access lines');
  expect(accessLines('logs-proxy-1')).toEqual([
    { level: 'access', time: expect.any(String), pid: expect.any(Number), name: 'gateway', msg: 'request', route: '/proxy/*', method: 'GET', path: '/proxy/api/items', status: 200, durationMs: expect.any(Number), traceId: 'logs-proxy-1' },
  ]);
  expect(accessLines('logs-proxy-2')).toEqual([expect.objectContaining({ route: '/proxy/*', status: 401 })]);
  expect(gateway.output().stdout).not.toContain('s3cr3t-value');
  // The admin API's own request lines are `info`: not at LOG_LEVEL=warn.
  expect(logLines().filter((line) => line.level === 'info')).toEqual([]);
});

it('writes one access line per PDP request over HTTP and gRPC, the gRPC one with its decision', async () => {
  const check = await call(gateway.url, 'POST', '/v1/check', { body: { agentId: agent.id, plugin: 'FilePlugin', function: 'ReadFile' }, headers: { 'x-api-key': apiKey, 'x-trace-id': 'logs-check-1' } });
  expect(check.status).toBe(200);
  const answer = await evaluate(client, apiKey, { agentId: agent.id, plugin: 'FilePlugin', function: 'ReadFile', traceId: 'logs-grpc-1' });
  expect(answer).toMatchObject({ decision: 'DECISION_ALLOW', traceId: 'logs-grpc-1' });
  await eventually(async () => accessLines('logs-grpc-1').length === 1, 5000, 'the gRPC access line');
  expect(accessLines('logs-check-1')).toEqual([expect.objectContaining({ route: '/v1/check', method: 'POST', path: '/v1/check', status: 200 })]);
  expect(accessLines('logs-grpc-1')).toEqual([
    expect.objectContaining({ route: '/agentgov.pdp.v1.PolicyDecisionPoint/Evaluate', method: 'grpc', status: 'OK', decision: 'allow', decisionId: answer.decisionId, durationMs: expect.any(Number) }),
  ]);
});

it('warns of a request answered slower than SLOW_REQUEST_MS, and of no faster one', async () => {
  const slow = await call(gateway.url, 'GET', `/proxy/slow/${SLOW_REQUEST_MS + 200}`, { bearer: agent.token, headers: { 'x-trace-id': 'logs-slow-1' } });
  expect(slow.status).toBe(200);
  await eventually(async () => logLines().some((line) => line.msg === 'slow request'), 5000, 'the slow-request warning');
  const warnings = logLines().filter((line) => line.msg === 'slow request');
  expect(warnings).toEqual([
    expect.objectContaining({ level: 'warn', route: '/proxy/*', method: 'GET', path: `/proxy/slow/${SLOW_REQUEST_MS + 200}`, status: 200, traceId: 'logs-slow-1', slowRequestMs: SLOW_REQUEST_MS }),
  ]);
  expect(warnings[0].durationMs).toBeGreaterThanOrEqual(SLOW_REQUEST_MS + 200);
});
