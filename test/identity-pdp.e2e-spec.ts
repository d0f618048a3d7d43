import { decodeProtectedHeader } from 'jose';
import { call, TestResponse } from './support/http-client';
import { auditEntries, createAgent, proxy, putPolicies, revokeAgent } from './support/org-fixtures';
import { createOrganization, startGateway, TEST_PUBLIC_URL, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/** The identity description and the trust score (issue #11 "Identity, trust and delegation"; docs/trust.md). */

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let upstream: TestUpstream;
let gateway: TestGateway;
let org: TestOrganization;

beforeAll(async () => {
  upstream = await startUpstream();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url });
  org = await createOrganization(gateway, 'enterprise', 'Identity PDP org');
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

/** A GET with this organization's admin token, another's, or (null) none. */
function get(path: string, adminToken: string | null = org.adminToken): Promise<TestResponse> {
  return call(gateway.url, 'GET', path, { adminToken: adminToken ?? undefined });
}

describe('GET /api/v1/identity/:agentId', () => {
  it('describes the agent: identity tier vocabulary, tags, organization, issuer and the key its tokens are signed with', async () => {
    const agent = await createAgent(gateway, org, { name: 'invoice-bot', tags: ['finance', 'pii'] });
    const response = await get(`/api/v1/identity/${agent.id}`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      id: agent.id,
      name: 'invoice-bot',
      tier: 'untrusted',
      tags: ['finance', 'pii'],
      org: org.id,
      issuer: TEST_PUBLIC_URL,
      keyId: decodeProtectedHeader(agent.token).kid,
      createdAt: agent.createdAt,
      revoked: false,
      revokedAt: null,
    });
  });

  it('names the upper tiers as the admin API does, and shows a revocation', async () => {
    for (const tier of ['verified', 'trusted', 'privileged']) {
      const agent = await createAgent(gateway, org, { trustTier: tier });
      expect((await get(`/api/v1/identity/${agent.id}`)).body.tier).toBe(tier);
    }
    const agent = await createAgent(gateway, org, { trustTier: 'trusted' });
    const { revokedAt } = await revokeAgent(gateway, org, agent.id);
    expect(revokedAt).toMatch(ISO_MS);
    expect((await get(`/api/v1/identity/${agent.id}`)).body).toMatchObject({ id: agent.id, tier: 'trusted', revoked: true, revokedAt });
  });

  it('is 404 for another organization’s agent or an unknown one, and 401 without an admin token', async () => {
    const other = await createOrganization(gateway, 'enterprise', 'Other org');
    const foreign = await createAgent(gateway, other);
    expect(await get(`/api/v1/identity/${foreign.id}`).then((r) => [r.status, r.body])).toEqual([404, { error: 'not_found', message: `agent ${foreign.id} not found` }]);
    expect((await get('/api/v1/identity/agent_000000000000000000000000')).status).toBe(404);
    expect((await get(`/api/v1/identity/${foreign.id}`, other.adminToken)).status).toBe(200);
    expect((await get(`/api/v1/identity/${foreign.id}`, null)).body).toEqual({ error: 'unauthorized', message: 'Missing X-Admin-Token header' });
    expect((await get(`/api/v1/identity/${foreign.id}`, 'adm_wrong')).status).toBe(401);
  });
});

describe('GET /api/v1/trust/:agentId', () => {
  it('scores a new agent by its tier alone', async () => {
    const agent = await createAgent(gateway, org, { trustTier: 'trusted' });
    const response = await get(`/api/v1/trust/${agent.id}`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      agentId: agent.id,
      score: 700,
      window: '7d',
      factors: {
        tier: { value: 'trusted', points: 700 },
        age: { days: 0, points: 0 },
        denyRatio: { decisions: 0, denied: 0, ratio: 0, points: 0 },
        rateLimitHits: { count: 0, points: 0 },
        revoked: { value: false },
      },
      computedAt: expect.stringMatching(ISO_MS),
    });
  });

  it('takes the deny ratio and rate-limit hits from the audit trail of the last 7 days', async () => {
    const scored = await createOrganization(gateway, 'enterprise', 'Trust org');
    await putPolicies(gateway, scored, [
      { name: 'no-writes', action: 'write:*', condition: 'true', reason: 'read-only' },
      { name: 'limited', action: 'read:limited*', condition: 'rate_limit(per_agent, 2, 1m)', reason: 'two a minute' },
    ]);
    const agent = await createAgent(gateway, scored, { trustTier: 'verified' });
    const bystander = await createAgent(gateway, scored, { trustTier: 'verified' });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await proxy(gateway, agent.token, 'GET', `/ok/${i}`)).status);
    for (let i = 0; i < 2; i++) statuses.push((await proxy(gateway, agent.token, 'POST', `/x/${i}`)).status);
    for (let i = 0; i < 3; i++) statuses.push((await proxy(gateway, agent.token, 'GET', `/limited/${i}`)).status);
    for (let i = 0; i < 4; i++) statuses.push((await proxy(gateway, bystander.token, 'POST', `/x/${i}`)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 403, 403, 200, 200, 429, 403, 403, 403, 403]);
    await auditEntries(gateway, scored, `agentId=${agent.id}&source=proxy`, 11);

    const response = await call(gateway.url, 'GET', `/api/v1/trust/${agent.id}`, { adminToken: scored.adminToken });
    expect(response.status).toBe(200);
    // 500 (verified) + 0 (age) - round(400 * 2 / 11) - 10 * 1
    expect(response.body).toMatchObject({
      agentId: agent.id,
      score: 417,
      factors: {
        tier: { value: 'verified', points: 500 },
        age: { days: 0, points: 0 },
        denyRatio: { decisions: 11, denied: 2, ratio: 0.18, points: -73 },
        rateLimitHits: { count: 1, points: -10 },
        revoked: { value: false },
      },
    });

    await revokeAgent(gateway, scored, agent.id);
    const revoked = await call(gateway.url, 'GET', `/api/v1/trust/${agent.id}`, { adminToken: scored.adminToken });
    expect(revoked.body).toMatchObject({ score: 0, factors: { revoked: { value: true }, denyRatio: { decisions: 11, denied: 2 } } });
  });

  it('is 404 for another organization’s agent and 401 without an admin token', async () => {
    const other = await createOrganization(gateway, 'enterprise', 'Other trust org');
    const foreign = await createAgent(gateway, other);
    expect((await get(`/api/v1/trust/${foreign.id}`)).status).toBe(404);
    expect((await get(`/api/v1/trust/${foreign.id}`, null)).status).toBe(401);
  });
});
