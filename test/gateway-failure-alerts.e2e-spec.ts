import { Metadata, ServiceError, status as GrpcStatus } from '@grpc/grpc-js';
import { AlertReceiver, ReceivedRequest, startAlertReceiver } from './support/alert-receivers';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { freePort, pdpClient, PdpClient } from './support/pdp-client';
import { createOrganization, startGateway, TestGateway } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * The `error` trigger when the gateway itself fails a request before any decision (here: its
 * database is unreachable), not only when an upstream fails after one: the caller got a 5xx,
 * and the team on call wants to hear of it as they hear of a 502 (issue #16: "`error` fires on
 * gateway or upstream failures (5xx)").
 */

interface Payload {
  severity: string;
  trigger: string;
  title: string;
  message: string;
  entry: Record<string, string>;
}

let database: OwnDatabase;
let gateway: TestGateway;
let upstream: TestUpstream;
let receiver: AlertReceiver;
let agent: { id: string; token: string };
let apiKey: string;
let pdp: PdpClient;

beforeAll(async () => {
  [database, upstream, receiver] = await Promise.all([ownDatabase(), startUpstream(), startAlertReceiver()]);
  const grpcPort = await freePort();
  gateway = await startGateway({
    DATABASE_URL: database.url,
    PDP_GRPC_PORT: String(grpcPort),
    UPSTREAM_URL: upstream.url,
    ALERT_ON: 'error',
    ALERT_WEBHOOK_URL: `${receiver.url}/alerts`,
    ALERT_RATE_LIMIT: '1000',
    ALERT_ENVIRONMENT: `e2e-failures-${process.pid}-${Date.now()}`,
  });
  const org = await createOrganization(gateway, 'enterprise', 'Gateway failures org');
  // Made while the database is up, used for the first time once it is down (nothing cached).
  agent = (await call<{ id: string; token: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'cold-agent' } })).body;
  apiKey = (await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'cold key' } })).body.key;
  pdp = pdpClient(grpcPort);
  await database.takeDown();
});

afterAll(async () => {
  pdp?.close();
  await gateway?.close();
  // The cluster-event listener's reconnect timer fires up to 1 s after close (service.e2e-spec.ts).
  await new Promise((resolve) => setTimeout(resolve, 1100));
  await Promise.all([database?.dispose(), upstream?.close(), receiver?.close()]);
});

function withTrace(traceId: string) {
  return (request: ReceivedRequest) => (request.json as unknown as Payload).entry?.traceId === traceId;
}

it('the proxy answers 503 when the database is unreachable, and raises a critical error alert', async () => {
  const traceId = `db-down-proxy-${Date.now()}`;
  const response = await call(gateway.url, 'GET', '/proxy/api/items', { bearer: agent.token, headers: { 'x-trace-id': traceId } });
  expect(response.status).toBe(503);
  expect(response.body).toMatchObject({ error: 'service_unavailable' });

  const [alert] = await receiver.waitFor(1, withTrace(traceId));
  expect(alert).toBeDefined();
  expect(alert.headers['x-service-trigger']).toBe('error');
  const payload = alert.json as unknown as Payload;
  expect(payload).toMatchObject({ severity: 'critical', trigger: 'error', title: 'Request failed with status 503' });
  expect(payload.message).toContain('The database is unavailable');
  expect(payload.entry).toMatchObject({ traceId, method: 'GET', path: '/api/items', decision: 'deny' });
});

it('so does /v1/check', async () => {
  const traceId = `db-down-check-${Date.now()}`;
  const response = await call(gateway.url, 'POST', '/v1/check', {
    body: { agentId: agent.id, plugin: 'FilePlugin', function: 'ReadFile' },
    headers: { 'x-api-key': apiKey, 'x-trace-id': traceId },
  });
  expect(response.status).toBe(503);

  const [alert] = await receiver.waitFor(1, withTrace(traceId));
  expect(alert).toBeDefined();
  expect(alert.json as unknown as Payload).toMatchObject({ severity: 'critical', trigger: 'error', entry: { traceId, method: 'POST', path: '/v1/check' } });
});

it('so does the PDP over gRPC, with the trace id of the call metadata', async () => {
  const traceId = `db-down-grpc-${Date.now()}`;
  const metadata = new Metadata();
  metadata.set('x-api-key', apiKey);
  metadata.set('x-trace-id', traceId);
  const error = await new Promise<ServiceError | null>((resolve) => pdp.Evaluate({ agentId: agent.id, action: 'read:x' }, metadata, (failure) => resolve(failure)));
  expect(error?.code).toBe(GrpcStatus.UNAVAILABLE);

  const [alert] = await receiver.waitFor(1, withTrace(traceId));
  expect(alert).toBeDefined();
  const payload = alert.json as unknown as Payload;
  expect(payload).toMatchObject({ severity: 'critical', trigger: 'error', entry: { traceId, method: '', path: '/agentgov.pdp.v1.PolicyDecisionPoint/Evaluate' } });
  expect(payload.message).toContain('The database is unavailable');
});

it('so does the admin API', async () => {
  const traceId = `db-down-admin-${Date.now()}`;
  const response = await call(gateway.url, 'GET', '/admin/agents', { adminToken: 'x'.repeat(40), headers: { 'x-trace-id': traceId } });
  expect(response.status).toBe(503);

  const [alert] = await receiver.waitFor(1, withTrace(traceId));
  expect(alert).toBeDefined();
  expect(alert.json as unknown as Payload).toMatchObject({ severity: 'critical', trigger: 'error', entry: { traceId, method: 'GET', path: '/admin/agents' } });
});

it('a request refused for what it is (401, 404) raises nothing', async () => {
  const traceId = `unauthorized-${Date.now()}`;
  expect((await call(gateway.url, 'GET', '/proxy/api/items', { headers: { 'x-trace-id': traceId } })).status).toBe(401);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(receiver.requests.filter(withTrace(traceId))).toEqual([]);
});
