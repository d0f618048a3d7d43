import { Metadata, ServiceError, status as GrpcStatus } from '@grpc/grpc-js';
import { AlertReceiver, ReceivedRequest, startAlertReceiver } from './support/alert-receivers';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { freePort, pdpClient, PdpClient } from './support/pdp-client';
import { TcpRelay } from './support/tcp-relay';
import { createOrganization, startGateway, TestGateway } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * The `error` trigger when the gateway itself fails a request before any decision (its database
 * unreachable, its Redis not answering), not only when an upstream fails after one: the caller
 * got a 5xx, and the team on call wants to hear of it as they hear of a 502 (issue #16: "`error`
 * fires on gateway or upstream failures (5xx)").
 */

interface Payload {
  severity: string;
  trigger: string;
  title: string;
  message: string;
  entry: Record<string, string>;
}

let upstream: TestUpstream;
let receiver: AlertReceiver;

beforeAll(async () => {
  [upstream, receiver] = await Promise.all([startUpstream(), startAlertReceiver()]);
});

afterAll(async () => {
  await Promise.all([upstream?.close(), receiver?.close()]);
});

function withTrace(traceId: string) {
  return (request: ReceivedRequest) => (request.json as unknown as Payload).entry?.traceId === traceId;
}

function alertEnv(label: string): Record<string, string> {
  return {
    UPSTREAM_URL: upstream.url,
    ALERT_ON: 'error',
    ALERT_WEBHOOK_URL: `${receiver.url}/alerts`,
    ALERT_RATE_LIMIT: '1000',
    ALERT_ENVIRONMENT: `e2e-${label}-${process.pid}-${Date.now()}`,
  };
}

describe('the database unreachable', () => {
  let database: OwnDatabase;
  let gateway: TestGateway;
  let agent: { id: string; token: string };
  let apiKey: string;
  let pdp: PdpClient;

  beforeAll(async () => {
    database = await ownDatabase();
    const grpcPort = await freePort();
    gateway = await startGateway({ ...alertEnv('db-down'), DATABASE_URL: database.url, PDP_GRPC_PORT: String(grpcPort) });
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
    await database?.dispose();
  });

  it('the proxy answers 503, and raises a critical error alert', async () => {
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

  it('a request refused for what it is (401) raises nothing', async () => {
    const traceId = `unauthorized-${Date.now()}`;
    expect((await call(gateway.url, 'GET', '/proxy/api/items', { headers: { 'x-trace-id': traceId } })).status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.requests.filter(withTrace(traceId))).toEqual([]);
  });
});

describe('Redis not answering under a rate_limit policy', () => {
  let redis: TcpRelay;
  let gateway: TestGateway;
  let agent: { id: string; token: string };

  beforeAll(async () => {
    redis = await TcpRelay.listen(await freePort(), 6379);
    gateway = await startGateway({ ...alertEnv('redis-frozen'), REDIS_URL: `redis://127.0.0.1:${redis.port}` });
    const org = await createOrganization(gateway, 'enterprise', 'Redis frozen org');
    const policy = 'name: limited\nrules:\n  - name: ten-a-minute\n    condition: "rate_limit(per_agent, 10, 1m)"\n    action: deny\n    reason: Ten a minute\n';
    expect((await call(gateway.url, 'PUT', '/admin/policies/limited', { adminToken: org.adminToken, body: policy, headers: { 'content-type': 'application/yaml' } })).status).toBe(201);
    agent = (await call<{ id: string; token: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'limited-agent' } })).body;
    expect((await call(gateway.url, 'GET', '/proxy/api/items', { bearer: agent.token })).status).toBe(200);
  });

  afterAll(async () => {
    redis?.release();
    await gateway?.close();
    await redis?.close();
  });

  it('a decision under a rate_limit rule answers 503 within seconds, not never, and raises an error alert', async () => {
    redis.hold();
    const traceId = `redis-frozen-${Date.now()}`;
    const started = Date.now();
    const response = await call(gateway.url, 'GET', '/proxy/api/items', { bearer: agent.token, headers: { 'x-trace-id': traceId }, timeoutMs: 8000 });
    expect(response.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(response.body).toMatchObject({ error: 'service_unavailable', message: expect.stringContaining('REDIS_URL') });

    // The alert worker's own count in Redis gives up too (after 1 s), and it counts alone.
    const [alert] = await receiver.waitFor(1, withTrace(traceId));
    expect(alert).toBeDefined();
    expect(alert.json as unknown as Payload).toMatchObject({ severity: 'critical', trigger: 'error', entry: { traceId, method: 'GET', path: '/api/items' } });
    redis.release();
  });
});
