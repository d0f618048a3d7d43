import { call } from './support/http-client';
import { freePort } from './support/processes';
import { TcpRelay } from './support/tcp-relay';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * A request under a `rate_limit` rule while Redis does not answer is refused (503: the limit
 * cannot be checked), after its policies were consulted: the audit trail records it as a denial
 * with the status and reason the caller got, as it records every other refusal (issue #30).
 */

interface AuditEntry {
  traceId: string | null;
  source: string;
  kind: string;
  agentId: string | null;
  action: string;
  method: string | null;
  path: string | null;
  decision: string;
  enforced: boolean;
  status: number | null;
  policyName: string | null;
  reason: string | null;
}

const POLICY = 'name: limited\nrules:\n  - name: ten-a-minute\n    condition: "rate_limit(per_agent, 10, 1m)"\n    action: deny\n    reason: Ten a minute\n';

let upstream: TestUpstream;
let redis: TcpRelay;
let gateway: TestGateway;
let org: TestOrganization;
let agent: { id: string; token: string };
let apiKey: string;

beforeAll(async () => {
  upstream = await startUpstream();
  redis = await TcpRelay.listen(await freePort(), 6379);
  gateway = await startGateway({ UPSTREAM_URL: upstream.url, REDIS_URL: `redis://127.0.0.1:${redis.port}` });
  org = await createOrganization(gateway, 'enterprise', 'Redis refusals org');
  const put = await call(gateway.url, 'PUT', '/admin/policies/limited', { adminToken: org.adminToken, body: POLICY, headers: { 'content-type': 'application/yaml' } });
  expect(put.status).toBe(201);
  agent = (await call<{ id: string; token: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'limited-agent' } })).body;
  apiKey = (await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'limited key' } })).body.key;
  expect((await call(gateway.url, 'GET', '/proxy/api/items', { bearer: agent.token })).status).toBe(200);
});

afterAll(async () => {
  redis?.release();
  await gateway?.close();
  await redis?.close();
  await upstream?.close();
});

async function entryOf(traceId: string): Promise<AuditEntry | undefined> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const page = await call<{ entries: AuditEntry[] }>(gateway.url, 'GET', '/admin/audit?limit=1000', { adminToken: org.adminToken });
    expect(page.status).toBe(200);
    const entry = page.body.entries.find((candidate) => candidate.traceId === traceId);
    if (entry !== undefined || Date.now() > deadline) return entry;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

it('records a proxied request refused with 503 because Redis does not answer, as a denial with that status and reason', async () => {
  const traceId = `redis-down-proxy-${Date.now()}`;
  redis.hold();
  try {
    const response = await call(gateway.url, 'GET', '/proxy/api/items', { bearer: agent.token, headers: { 'x-trace-id': traceId }, timeoutMs: 8000 });
    expect(response.status).toBe(503);
    expect(response.body).toMatchObject({ error: 'service_unavailable', message: expect.stringContaining('REDIS_URL') });
  } finally {
    redis.release();
  }

  const entry = await entryOf(traceId);
  expect(entry).toMatchObject({
    source: 'proxy',
    kind: 'decision',
    agentId: agent.id,
    action: 'read:api/items',
    method: 'GET',
    path: '/api/items',
    decision: 'deny',
    enforced: true,
    status: 503,
    policyName: null,
    reason: expect.stringContaining('REDIS_URL'),
  });
});

it('records a /v1/check refused the same way', async () => {
  const traceId = `redis-down-check-${Date.now()}`;
  redis.hold();
  try {
    const response = await call(gateway.url, 'POST', '/v1/check', {
      body: { agentId: agent.id, plugin: 'FilePlugin', function: 'ReadFile' },
      headers: { 'x-api-key': apiKey, 'x-trace-id': traceId },
      timeoutMs: 8000,
    });
    expect(response.status).toBe(503);
  } finally {
    redis.release();
  }

  const entry = await entryOf(traceId);
  expect(entry).toMatchObject({ source: 'check', kind: 'decision', agentId: agent.id, decision: 'deny', status: 503, reason: expect.stringContaining('REDIS_URL') });
});
