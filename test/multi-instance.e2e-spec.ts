import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { call } from './support/http-client';
import { freePort } from './support/pdp-client';
import { TcpRelay } from './support/tcp-relay';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * Two gateway instances on one database, as behind a load balancer: what one instance writes
 * through the admin API the other shows at once; with and without Redis.
 */


interface AgentBody {
  id: string;
  name: string;
  trustTier: string;
  tags: string[];
  status: string;
  revokedAt: string | null;
}

it('refuses to start when REDIS_URL cannot be reached, naming it and why, without its password', async () => {
  await expect(startGateway({ REDIS_URL: 'redis://:redis-password@127.0.0.1:1' })).rejects.toThrow(/^REDIS_URL=redis:\/\/\*\*\*@127\.0\.0\.1:1 cannot be reached \(connect ECONNREFUSED 127\.0\.0\.1:1\)/);
});

describe.each([
  ['without Redis', {}],
  ['with REDIS_URL', { REDIS_URL: 'redis://127.0.0.1:6379' }],
])('two instances %s', (_label, env: Record<string, string>) => {
  let a: TestGateway;
  let b: TestGateway;
  let org: TestOrganization;

  beforeAll(async () => {
    a = await startGateway(env);
    b = await startGateway(env);
    org = await createOrganization(a, 'enterprise', 'Multi-instance org');
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  const on = <T = AgentBody>(gateway: TestGateway, method: string, path: string, body?: unknown) =>
    call<T>(gateway.url, method, path, { adminToken: org.adminToken, body });

  it('shows on B an agent created on A, and an organization created through A', async () => {
    const created = await on(a, 'POST', '/admin/agents', { name: 'shared', trustTier: 'verified', tags: ['x'] });
    expect(created.status).toBe(201);
    const onB = await on(b, 'GET', `/admin/agents/${created.body.id}`);
    expect(onB.status).toBe(200);
    expect(onB.body).toMatchObject({ id: created.body.id, name: 'shared', trustTier: 'verified', tags: ['x'], status: 'active' });
    const listOnB = await on<{ agents: AgentBody[] }>(b, 'GET', '/admin/agents');
    expect(listOnB.body.agents.map((agent) => agent.id)).toContain(created.body.id);
    expect((await on(b, 'GET', '/admin/organization')).body).toMatchObject({ id: org.id });
  });

  it('shows on B a change made on A', async () => {
    const created = await on(a, 'POST', '/admin/agents', { name: 'to-change' });
    const patched = await on(a, 'PATCH', `/admin/agents/${created.body.id}`, { trustTier: 'trusted', tags: ['after'] });
    expect(patched.status).toBe(200);
    const onB = await on(b, 'GET', `/admin/agents/${created.body.id}`);
    expect(onB.body).toMatchObject({ trustTier: 'trusted', tags: ['after'] });
  });

  it('shows on B a revocation made on A, and refuses a PATCH of it on B', async () => {
    const created = await on(a, 'POST', '/admin/agents', { name: 'to-revoke' });
    expect((await on(b, 'GET', `/admin/agents/${created.body.id}`)).body.status).toBe('active');
    const revoked = await on(a, 'DELETE', `/admin/agents/${created.body.id}`);
    expect(revoked.status).toBe(200);

    const onB = await on(b, 'GET', `/admin/agents/${created.body.id}`);
    expect(onB.body).toMatchObject({ status: 'revoked', revokedAt: revoked.body.revokedAt });
    const listOnB = await on<{ agents: AgentBody[] }>(b, 'GET', '/admin/agents');
    expect(listOnB.body.agents.map((agent) => agent.id)).not.toContain(created.body.id);
    const patchOnB = await on(b, 'PATCH', `/admin/agents/${created.body.id}`, { name: 'zombie' });
    expect(patchOnB.status).toBe(409);
    expect(patchOnB.body).toMatchObject({ error: 'agent_revoked' });
  });

  it('accepts at once the tokens of an instance started a moment ago', async () => {
    const agent = await on<AgentBody & { token: string }>(a, 'POST', '/admin/agents', { name: 'kid-probe' });
    const [header, ...rest] = agent.body.token.split('.');
    const unknownKid = { ...JSON.parse(Buffer.from(header, 'base64url').toString()), kid: 'a-key-no-instance-has' };
    const forged = [Buffer.from(JSON.stringify(unknownKid)).toString('base64url'), ...rest].join('.');
    // A, meeting a kid it does not know, reads the keys of every instance again.
    expect((await call(a.url, 'POST', '/api/v1/identity/delegate', { bearer: forged, body: {} })).status).toBe(401);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-new-instance-'));
    const c = await startGateway({ ...env, SIGNING_KEY_FILE: path.join(dir, 'signing-key.pem') });
    try {
      const created = await on<AgentBody & { token: string }>(c, 'POST', '/admin/agents', { name: 'from-c' });
      // Its token was refused by A for 10 s after A's last read: 401 where a valid token gets 400 (no delegate named).
      const onA = await call(a.url, 'POST', '/api/v1/identity/delegate', { bearer: created.body.token, body: {} });
      expect(onA.status).toBe(400);
    } finally {
      await c.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('applies the plan limit across instances', async () => {
    const free = await createOrganization(a, 'free', 'Multi-instance free org');
    const create = (gateway: TestGateway, name: string) => call(gateway.url, 'POST', '/admin/agents', { adminToken: free.adminToken, body: { name } });
    expect((await create(a, 'one')).status).toBe(201);
    expect((await create(b, 'two')).status).toBe(201);
    const third = await create(a, 'three');
    expect(third.status).toBe(403);
    expect(third.body).toMatchObject({ error: 'plan_limit_exceeded', limit: 2, plan: 'free' });
  });
});

describe('Redis not answering', () => {
  let redis: TcpRelay;
  let gateway: TestGateway;

  beforeAll(async () => {
    redis = await TcpRelay.listen(await freePort(), 6379);
    gateway = await startGateway({ REDIS_URL: `redis://127.0.0.1:${redis.port}` });
  });

  afterAll(async () => {
    redis?.release();
    await gateway?.close();
    await redis?.close();
  });

  it('a revocation answers within seconds, in force here, though the other instances cannot be told now', async () => {
    const org = await createOrganization(gateway, 'enterprise', 'Redis frozen org');
    const agent = (await call<AgentBody & { token: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'to-revoke' } })).body;
    redis.hold();
    const started = Date.now();
    const revoked = await call(gateway.url, 'DELETE', `/admin/agents/${agent.id}`, { adminToken: org.adminToken, timeoutMs: 10_000 });
    expect(revoked.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(5000);
    expect((await call(gateway.url, 'GET', '/proxy/anything', { bearer: agent.token })).status).toBe(401);
    redis.release();
  });
});
