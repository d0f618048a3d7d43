import { call, TestResponse } from './support/http-client';
import { createOrganization, startGateway, testDatabaseKind, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * Revocation and agent changes across gateway instances (docs/identity.md: a revocation, or a
 * PATCH, takes effect on the next request on every instance). Two instances share
 * the database and the signing key; the change is made on A and must hold on B.
 *
 * LISTEN/NOTIFY runs on PostgreSQL only: PGlite behind its socket server delivers no
 * notifications (and the embedded database serves a single process). Redis runs on both.
 */

// jest-circus reads testTimeout only from the top-level config, not from the e2e project's entry.

const transports: Array<[name: string, env: Record<string, string>]> = [
  ...(testDatabaseKind() === 'postgres' ? [['LISTEN/NOTIFY', {}] as [string, Record<string, string>]] : []),
  ['Redis pub/sub', { REDIS_URL: 'redis://127.0.0.1:6379' }],
];

const NO_UNVERIFIED_WRITES = `name: no-unverified-writes
match: { action: "write:*" }
rules:
  - condition: agent.trust_tier < verified
    action: deny
    reason: Unverified agents cannot write
`;

interface Agent {
  id: string;
  token: string;
}

let upstream: TestUpstream;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(() => upstream.close());

/** Repeats `request` until it answers `status`, for up to `timeoutMs`; returns the last response. */
async function until(status: number, request: () => Promise<TestResponse>, timeoutMs = 2000): Promise<TestResponse> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await request();
    if (response.status === status || Date.now() > deadline) return response;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.each(transports)('across instances with %s', (_name, env) => {
  let a: TestGateway;
  let b: TestGateway;
  let org: TestOrganization;

  beforeAll(async () => {
    a = await startGateway({ UPSTREAM_URL: upstream.url, ...env });
    b = await startGateway({ UPSTREAM_URL: upstream.url, ...env });
    org = await createOrganization(a, 'enterprise', 'Revocation org');
    const put = await call(a.url, 'PUT', '/admin/policies/no-unverified-writes', { adminToken: org.adminToken, body: NO_UNVERIFIED_WRITES, headers: { 'content-type': 'application/yaml' } });
    expect(put.status).toBe(201);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  async function createAgent(trustTier: string): Promise<Agent> {
    const response = await call<Agent>(a.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'roaming', trustTier } });
    expect(response.status).toBe(201);
    return response.body;
  }

  const onB = (agent: Agent, method = 'GET') => () => call(b.url, method, '/proxy/resource', { bearer: agent.token, body: method === 'GET' ? undefined : {} });

  it('a revocation on A rejects the token on B within 2 s', async () => {
    const agent = await createAgent('verified');
    expect((await onB(agent)()).status).toBe(200);
    expect((await onB(agent)()).status).toBe(200);
    expect((await call(a.url, 'DELETE', `/admin/agents/${agent.id}`, { adminToken: org.adminToken })).status).toBe(200);
    const started = Date.now();
    const response = await until(401, onB(agent));
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ error: 'unauthorized', message: expect.any(String) });
    expect(Date.now() - started).toBeLessThan(2000);
    expect((await call(a.url, 'GET', '/proxy/resource', { bearer: agent.token })).status).toBe(401);
  });

  it('a tier change on A applies to B’s next decisions, whatever the token claims', async () => {
    const agent = await createAgent('verified');
    expect((await onB(agent, 'POST')()).status).toBe(200);

    const demote = await call(a.url, 'PATCH', `/admin/agents/${agent.id}`, { adminToken: org.adminToken, body: { trustTier: 'unverified' } });
    expect(demote.status).toBe(200);
    const denied = await until(403, onB(agent, 'POST'));
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ error: 'forbidden', policy: 'no-unverified-writes', reason: 'Unverified agents cannot write' });

    const promote = await call(a.url, 'PATCH', `/admin/agents/${agent.id}`, { adminToken: org.adminToken, body: { trustTier: 'trusted' } });
    expect(promote.status).toBe(200);
    expect((await until(200, onB(agent, 'POST'))).status).toBe(200);
  });
});
