import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { AppError } from '../src/core/common/app-error';
import { ManagedIdentity, OidcVerifier } from '../src/gateway/access/oidc-verifier';
import { call } from './support/http-client';
import { createAgent, putPolicies } from './support/org-fixtures';
import { IssuerKey, startOidcIssuer, TestOidcIssuer } from './support/oidc-issuer';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * Managed identity (issue #11 "Credentials"): bearer tokens of a real OIDC issuer on loopback,
 * verified by the gateway's OidcVerifier against the issuer's discovery document and JWKS, and
 * mapped to the organization that registered their client id.
 */

const AUDIENCE = 'api://agentgov';
// Client ids are unique across organizations, and a PostgreSQL test database outlives a run.
const RUN = randomBytes(4).toString('hex');
const BILLING = `billing-worker-${RUN}`;
const REPORTING = `reporting-worker-${RUN}`;
const AZURE_APP = `5b1f-app-${RUN}`;

let issuer: TestOidcIssuer;
let gateway: TestGateway;
let verifier: OidcVerifier;
let org: TestOrganization;
let key: IssuerKey;

beforeAll(async () => {
  issuer = await startOidcIssuer();
  key = await issuer.newKey('key-1');
  issuer.publish(key);
  gateway = await startGateway({ OIDC_ISSUER: issuer.url, OIDC_AUDIENCE: AUDIENCE, OIDC_JWKS_COOLDOWN: '1s' });
  verifier = gateway.app.get(OidcVerifier);
  org = await createOrganization(gateway, 'enterprise', 'Managed identity org');
  await register(org, BILLING);
});
afterAll(async () => {
  await gateway.close();
  await issuer.close();
});

async function register(owner: TestOrganization, clientId: string, description?: string) {
  const response = await call(gateway.url, 'POST', '/admin/oidc-clients', { adminToken: owner.adminToken, body: { clientId, description, proofToken: await proofOf(clientId) } });
  expect(response.status).toBe(201);
  return response.body;
}

/** A current token of the client: what only whoever controls the managed identity can get. */
function proofOf(clientId: string): Promise<string> {
  return issuer.sign(key, { sub: `mi-of-${clientId}`, azp: clientId, aud: AUDIENCE });
}

/** The AppError a verification fails with, as [status, message]. */
async function rejection(token: string): Promise<[number, string]> {
  const error: unknown = await verifier.verify(token).then(
    () => new Error('the token was accepted'),
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof AppError)) throw error;
  return [error.status, error.message];
}

describe('managed identity tokens', () => {
  it('accepts a valid token and maps its client id to the registering organization', async () => {
    const token = await issuer.sign(key, { sub: 'mi-object-1', azp: BILLING, aud: AUDIENCE });
    const expected: ManagedIdentity = { orgId: org.id, subject: 'mi-object-1', clientId: BILLING, expiresMs: expect.any(Number) as number };
    expect(await verifier.verify(token)).toEqual(expected);
    expect(await verifier.verify(`Bearer ${token}`)).toEqual(expected);
    // Entra ID v1 tokens name the client `appid`; client-credentials tokens elsewhere `client_id`.
    expect(await verifier.verify(await issuer.sign(key, { sub: 'mi-object-2', appid: BILLING, aud: [AUDIENCE, 'other'] }))).toEqual({ ...expected, subject: 'mi-object-2' });
    expect(await verifier.verify(await issuer.sign(key, { sub: 'svc', client_id: BILLING, aud: AUDIENCE }))).toEqual({ ...expected, subject: 'svc' });
  });

  it('refuses a wrong audience, an expired token, another issuer, a bad signature and an HMAC token', async () => {
    expect(await rejection(await issuer.sign(key, { sub: 's', azp: BILLING, aud: 'api://someone-else' }))).toEqual([
      401,
      `Managed identity token audience is not ${AUDIENCE}`,
    ]);
    const now = Math.floor(Date.now() / 1000);
    expect(await rejection(await issuer.sign(key, { sub: 's', azp: BILLING, aud: AUDIENCE, iat: now - 7200, exp: now - 3600 }))).toEqual([
      401,
      'Managed identity token has expired',
    ]);
    expect(await rejection(await issuer.sign(key, { sub: 's', azp: BILLING, aud: AUDIENCE, iss: 'https://login.example.com' }))).toEqual([
      401,
      `Managed identity token issuer is not ${issuer.url}`,
    ]);
    const valid = await issuer.sign(key, { sub: 's', azp: BILLING, aud: AUDIENCE });
    const [header, payload] = valid.split('.');
    const forged = `${header}.${Buffer.from(JSON.stringify({ ...decode(payload), azp: 'someone' })).toString('base64url')}.${valid.split('.')[2]}`;
    expect(await rejection(forged)).toEqual([401, 'Managed identity token signature is invalid']);
    const hmac = await new SignJWT({ sub: 's', azp: BILLING, aud: AUDIENCE, iss: issuer.url })
      .setProtectedHeader({ alg: 'HS256', kid: 'key-1' })
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode('a-shared-secret-of-32-characters!'));
    expect(await rejection(hmac)).toEqual([401, 'Managed identity token must be signed with an asymmetric algorithm']);
    expect(await rejection('not-a-jwt')).toEqual([401, 'Managed identity token is malformed']);
  });

  it('refuses a key the issuer does not publish, then accepts it once the issuer rotates it in, fetching the JWKS once per cooldown', async () => {
    const rotated = await issuer.newKey('key-2');
    const token = await issuer.sign(rotated, { sub: 'mi-object-3', azp: BILLING, aud: AUDIENCE });
    // Past the cooldown, an unknown kid makes the gateway fetch the JWKS again: still not there.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const fetchesBefore = issuer.requests.filter((path) => path === '/jwks').length;
    expect(await rejection(token)).toEqual([401, 'Managed identity token is signed with a key the identity provider does not publish (kid key-2)']);
    expect(issuer.requests.filter((path) => path === '/jwks').length).toBe(fetchesBefore + 1);

    for (let i = 0; i < 5; i++) expect((await rejection(token))[1]).toMatch(/kid key-2/);
    // Within the cooldown, unknown kids do not make the gateway fetch the JWKS again.
    expect(issuer.requests.filter((path) => path === '/jwks').length).toBe(fetchesBefore + 1);

    issuer.publish(rotated);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await verifier.verify(token)).toMatchObject({ orgId: org.id, subject: 'mi-object-3', clientId: BILLING });
    expect(issuer.requests.filter((path) => path === '/jwks').length).toBe(fetchesBefore + 2);
    // Known keys need no fetch; the discovery document was read once.
    await verifier.verify(await issuer.sign(key, { sub: 'mi-object-1', azp: BILLING, aud: AUDIENCE }));
    expect(issuer.requests.filter((path) => path === '/jwks').length).toBe(fetchesBefore + 2);
    expect(issuer.requests.filter((path) => path === '/.well-known/openid-configuration')).toHaveLength(1);
  });

  it('refuses a client no organization registered, and stops mapping one when it is removed', async () => {
    const token = await issuer.sign(key, { sub: 'mi-object-4', azp: REPORTING, aud: AUDIENCE });
    expect(await rejection(token)).toEqual([401, `Managed identity client ${REPORTING} is not registered with an organization (POST /admin/oidc-clients)`]);

    const owner = await createOrganization(gateway, 'enterprise', 'Reporting org');
    await register(owner, REPORTING, 'nightly reports');
    expect((await verifier.verify(token)).orgId).toBe(owner.id);

    const removed = await call(gateway.url, 'DELETE', `/admin/oidc-clients/${REPORTING}`, { adminToken: owner.adminToken });
    expect(removed.status).toBe(200);
    expect(await rejection(token)).toEqual([401, `Managed identity client ${REPORTING} is not registered with an organization (POST /admin/oidc-clients)`]);
  });

  it('says so when managed identity is not configured', async () => {
    const plain = await startGateway();
    try {
      const token = await issuer.sign(key, { sub: 's', azp: BILLING, aud: AUDIENCE });
      await expect(plain.app.get(OidcVerifier).verify(token)).rejects.toMatchObject({
        status: 401,
        message: 'Managed identity is not configured on this gateway (OIDC_ISSUER and OIDC_AUDIENCE)',
      });
    } finally {
      await plain.close();
    }
  });

  it('answers 503 when the identity provider cannot be reached', async () => {
    const unreachable = await startGateway({ OIDC_ISSUER: 'http://127.0.0.1:1', OIDC_AUDIENCE: AUDIENCE });
    try {
      const token = await issuer.sign(key, { sub: 's', azp: BILLING, aud: AUDIENCE });
      await expect(unreachable.app.get(OidcVerifier).verify(token)).rejects.toMatchObject({
        status: 503,
        message: expect.stringMatching(/^The managed identity provider is unavailable: its discovery document http:\/\/127\.0\.0\.1:1\/\.well-known\/openid-configuration could not be read/),
      });
    } finally {
      await unreachable.close();
    }
  });
});

describe('adapters with a managed identity', () => {
  it('decide through /v1/check with the token as their credential, for the registering organization only', async () => {
    await putPolicies(gateway, org, [{ name: 'no-transfers', condition: 'plugin == "payments"', reason: 'no transfers' }]);
    const agent = await createAgent(gateway, org, { name: 'mi-agent' });
    const token = await issuer.sign(key, { sub: 'mi-object-5', azp: BILLING, aud: AUDIENCE });
    const check = (bearer: string, agentId = agent.id) =>
      call(gateway.url, 'POST', '/v1/check', { bearer, body: { agentId, plugin: 'payments', function: 'transfer' } });

    const decided = await check(token);
    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({ decision: 'deny', policy: 'no-transfers', reason: 'no transfers' });

    const wrongAudience = await check(await issuer.sign(key, { sub: 'mi-object-5', azp: BILLING, aud: 'api://other' }));
    expect(wrongAudience.status).toBe(401);
    expect(wrongAudience.body).toEqual({ error: 'unauthorized', message: `Managed identity token audience is not ${AUDIENCE}` });

    // Another organization's agent is not this identity's to ask about.
    const stranger = await createAgent(gateway, await createOrganization(gateway, 'enterprise', 'Stranger org'));
    expect((await check(token, stranger.id)).status).toBe(404);
  });
});

describe('/admin/oidc-clients', () => {
  it('registers, lists and removes an organization’s clients; a client id belongs to one organization', async () => {
    const owner = await createOrganization(gateway, 'enterprise', 'Clients org');
    const created = await call(gateway.url, 'POST', '/admin/oidc-clients', {
      adminToken: owner.adminToken,
      body: { clientId: AZURE_APP, description: 'Azure MI', proofToken: await proofOf(AZURE_APP) },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ clientId: AZURE_APP, agentId: null, description: 'Azure MI', createdAt: expect.stringMatching(/Z$/) });

    const listed = await call(gateway.url, 'GET', '/admin/oidc-clients', { adminToken: owner.adminToken });
    expect(listed.body).toEqual({ clients: [created.body] });
    expect((await call(gateway.url, 'GET', '/admin/oidc-clients', { adminToken: org.adminToken })).body).toEqual({
      clients: [expect.objectContaining({ clientId: BILLING })],
    });

    const taken = await call(gateway.url, 'POST', '/admin/oidc-clients', { adminToken: org.adminToken, body: { clientId: AZURE_APP, proofToken: await proofOf(AZURE_APP) } });
    expect(taken.status).toBe(409);
    expect(taken.body).toEqual({ error: 'conflict', message: `managed identity client ${AZURE_APP} is already registered` });
    const notYours = await call(gateway.url, 'DELETE', `/admin/oidc-clients/${AZURE_APP}`, { adminToken: org.adminToken });
    expect(notYours.status).toBe(404);

    const bad = await call(gateway.url, 'POST', '/admin/oidc-clients', { adminToken: owner.adminToken, body: { clientId: 42, proofToken: 'x' } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('clientId must be a string');
    expect((await call(gateway.url, 'GET', '/admin/oidc-clients')).status).toBe(401);

    const removed = await call(gateway.url, 'DELETE', `/admin/oidc-clients/${AZURE_APP}`, { adminToken: owner.adminToken });
    expect(removed.body).toEqual(created.body);
    expect((await call(gateway.url, 'GET', '/admin/oidc-clients', { adminToken: owner.adminToken })).body).toEqual({ clients: [] });
  });
});

describe('/admin/oidc-clients binding', () => {
  it('registers a client only with a current token of that very client: no organization can claim another’s first', async () => {
    const squatter = await createOrganization(gateway, 'enterprise', 'Squatter org');
    const victim = `victim-worker-${RUN}`;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ clientId: victim }, 'proofToken must be a string'],
      [{ clientId: victim, proofToken: await proofOf(`squatter-${RUN}`) }, `proofToken is a token of client squatter-${RUN}, not of ${victim}`],
      [{ clientId: victim, proofToken: await issuer.sign(key, { sub: 'x', azp: victim, aud: 'api://elsewhere' }) }, `proofToken: Managed identity token audience is not ${AUDIENCE}`],
      [{ clientId: victim, proofToken: await issuer.sign(key, { sub: 'x', azp: victim, aud: AUDIENCE }, { expiresInSeconds: -60 }) }, 'proofToken: Managed identity token has expired'],
    ];
    for (const [body, message] of cases) {
      const refused = await call(gateway.url, 'POST', '/admin/oidc-clients', { adminToken: squatter.adminToken, body });
      expect(refused.status).toBe(400);
      expect(refused.body.message).toContain(message);
    }
    expect((await call(gateway.url, 'GET', '/admin/oidc-clients', { adminToken: squatter.adminToken })).body).toEqual({ clients: [] });
    // The organization that controls it registers it.
    const owner = await createOrganization(gateway, 'enterprise', 'Victim org');
    await register(owner, victim);
  });
});

describe('/admin/oidc-clients under concurrency', () => {
  it('gives a client id registered by two organizations at once to the one answered 201; the other gets 409', async () => {
    const first = await createOrganization(gateway, 'enterprise', 'Racing org 1');
    const second = await createOrganization(gateway, 'enterprise', 'Racing org 2');
    const listed = async (owner: TestOrganization, clientId: string) =>
      ((await call<{ clients: Array<{ clientId: string }> }>(gateway.url, 'GET', '/admin/oidc-clients', { adminToken: owner.adminToken })).body.clients ?? []).some(
        (client) => client.clientId === clientId,
      );
    for (let round = 0; round < 40; round++) {
      const clientId = `racing-${RUN}-${round}`;
      const [one, two] = await Promise.all(
        await Promise.all([first, second].map(async (owner) => ({ owner, proofToken: await proofOf(clientId) }))).then((both) =>
          both.map(({ owner, proofToken }) => call(gateway.url, 'POST', '/admin/oidc-clients', { adminToken: owner.adminToken, body: { clientId, proofToken } })),
        ),
      );
      expect([one.status, two.status].sort()).toEqual([201, 409]);
      const winner = one.status === 201 ? first : second;
      const loser = winner === first ? second : first;
      expect(await listed(winner, clientId)).toBe(true);
      expect(await listed(loser, clientId)).toBe(false);
    }
  });
});

function decode(segment: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as Record<string, unknown>;
}
