import { createPrivateKey, createPublicKey } from 'node:crypto';
import fs from 'node:fs';
import { calculateJwkThumbprint, JWK, SignJWT } from 'jose';
import { call } from './support/http-client';
import { createOrganization, startGateway, TEST_PUBLIC_URL, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * An agent token whose `iat` lies in the future is refused (beyond 60 s of clock skew), even with
 * a valid signature: tokens here are signed with the gateway's own key (the run's shared
 * SIGNING_KEY_FILE), exactly as the gateway signs them, so only `iat` differs from a good one.
 */
describe('agent tokens issued in the future', () => {
  let upstream: TestUpstream;
  let gateway: TestGateway;
  let org: TestOrganization;
  let agentId: string;

  beforeAll(async () => {
    upstream = await startUpstream();
    gateway = await startGateway({ UPSTREAM_URL: upstream.url });
    org = await createOrganization(gateway);
    const agent = await call<{ id: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'clock-bot', trustTier: 'verified' } });
    expect(agent.status).toBe(201);
    agentId = agent.body.id;
  });

  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  /** A token for the agent signed with the gateway's key, issued `issuedInSeconds` from now. */
  async function tokenIssuedIn(issuedInSeconds: number): Promise<string> {
    const privateKey = createPrivateKey(fs.readFileSync(process.env.TEST_SIGNING_KEY_FILE!, 'utf8'));
    const kid = await calculateJwkThumbprint(createPublicKey(privateKey).export({ format: 'jwk' }) as JWK);
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ name: 'clock-bot', trust: 'verified', tier: 'verified', tags: [], org: org.id })
      .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'JWT' })
      .setSubject(agentId)
      .setIssuer(TEST_PUBLIC_URL)
      .setIssuedAt(now + issuedInSeconds)
      .setExpirationTime(now + issuedInSeconds + 3600)
      .sign(privateKey);
  }

  it('refuses at /proxy/* a token issued an hour ahead with 401 naming the problem, without echoing the token', async () => {
    const token = await tokenIssuedIn(3600);
    const refused = await call<{ error: string; message: string }>(gateway.url, 'GET', '/proxy/orders/1', { bearer: token });
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('unauthorized');
    expect(refused.body.message).toMatch(/issued in the future \(iat \d+, more than 60 s ahead/);
    expect(refused.text).not.toContain(token);
    expect(refused.text).not.toContain(token.split('.')[2]);
    expect(upstream.requests.filter((request) => request.url === '/orders/1')).toHaveLength(0);
  });

  it('accepts the same token issued now, and one issued within the 60 s of skew', async () => {
    for (const issuedIn of [0, 30]) {
      const accepted = await call(gateway.url, 'GET', `/proxy/orders/${issuedIn}`, { bearer: await tokenIssuedIn(issuedIn) });
      expect(accepted.status).toBe(200);
    }
  });
});
