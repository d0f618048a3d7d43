import { Test } from '@nestjs/testing';
import { decodeJwt, exportJWK, generateKeyPair, SignJWT } from 'jose';
import pino from 'pino';
import type { AuditRecord } from '../src/core/audit-record/audit-record';
import { DecisionCoreModule } from '../src/core/decision/decision-core.module';
import {
  AGENT_SOURCE,
  agentSnapshot,
  AgentSnapshot,
  DECISION_LOG,
  DECISION_SETTINGS,
  LoadedPolicies,
  POLICY_SOURCE,
  RATE_LIMITER,
  USAGE_GATE,
  VERIFICATION_KEYS,
} from '../src/core/decision/decision-sources';
import { DecisionService } from '../src/core/decision/decision.service';
import { AgentAuthenticator } from '../src/core/decision/agent-authenticator';
import { JwkSet } from '../src/sidecar/jwk-set';
import { LoggingModule } from '../src/core/logging/logging.module';
import { compilePolicies } from '../src/core/policy-engine/compile-policies';
import { SlidingWindowLimiter } from '../src/core/policy-engine/sliding-window-limiter';
import { call, TestResponse } from './support/http-client';
import { auditEntries, createAgent, proxy, putPolicies, revokeAgent, TestAgent } from './support/org-fixtures';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/** Delegation (issue #11 "Identity, trust and delegation"): RFC 8693 chains, lifetime and scope narrowing, revocation. */

/** A delegation's grant, as the delegator receives it. */
interface Grant {
  grant: string;
  expiresAt: string;
  agentId: string;
  delegatedBy: string;
  delegation: { depth: number; chain: string[] };
  scope: string[] | null;
}

/** RFC 8693's answer to the delegate that redeems a grant. */
interface Exchanged {
  access_token: string;
  issued_token_type: string;
  token_type: string;
  expires_in: number;
  expiresAt: string;
  agentId: string;
  trustTier: string;
  delegation: { depth: number; chain: string[] };
  scope: string[] | null;
}

/** A grant redeemed by its delegate: the grant's facts and the delegated token. */
type Delegated = Grant & { token: string; tokenExpiresAt: string; trustTier: string };

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

let upstream: TestUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

/** A delegation's answer: the grant, or an error body. */
type DelegateAnswer = Grant & { error?: string; message?: string };

function delegate(token: string | undefined, body: Record<string, unknown>): Promise<TestResponse<DelegateAnswer>> {
  return call<DelegateAnswer>(gateway.url, 'POST', '/api/v1/identity/delegate', { bearer: token, body });
}

function redeem(grant: string, actorToken: string, extra: Record<string, unknown> = {}): Promise<TestResponse<Exchanged & { error?: string; message?: string }>> {
  return call(gateway.url, 'POST', '/api/v1/identity/token', { body: { grant_type: TOKEN_EXCHANGE, subject_token: grant, actor_token: actorToken, ...extra } });
}

/** `token` delegates to `to`, which redeems the grant with its own token. */
async function delegated(token: string, to: TestAgent, body: Record<string, unknown> = {}): Promise<Delegated> {
  const granted = await delegate(token, { agentId: to.id, ...body });
  expect(granted.status).toBe(201);
  const exchanged = await redeem(granted.body.grant, to.token);
  expect(exchanged.status).toBe(200);
  return { ...granted.body, token: exchanged.body.access_token, tokenExpiresAt: exchanged.body.expiresAt, trustTier: exchanged.body.trustTier };
}

/** An organization with these agents (by name) and policies. */
async function organization(names: string[], policies: Parameters<typeof putPolicies>[2] = []): Promise<{ org: TestOrganization; agents: TestAgent[] }> {
  const org = await createOrganization(gateway, 'enterprise', 'Delegation org');
  await putPolicies(gateway, org, policies);
  const agents: TestAgent[] = [];
  for (const name of names) agents.push(await createAgent(gateway, org, { name }));
  return { org, agents };
}

describe('delegation chains', () => {
  it('carries a chain of depth 3 through the proxy: policies read delegation.depth and delegation.chain, the audit trail records the chain', async () => {
    const { org, agents } = await organization(['planner', 'researcher', 'fetcher']);
    const [a, b, c] = agents;
    await putPolicies(gateway, org, [
      { name: 'max-depth', condition: 'delegation.depth > 2', reason: 'chains deeper than 2 are not allowed' },
      { name: 'no-delete-for-planner', action: 'delete:*', condition: `delegation.chain contains "${a.id}"`, reason: 'nobody deletes on behalf of the planner' },
    ]);

    const toB = await delegated(a.token, b);
    expect(toB).toMatchObject({ agentId: b.id, delegatedBy: a.id, delegation: { depth: 2, chain: [a.id, b.id] }, scope: null });
    const claimsB = decodeJwt(toB.token);
    expect(claimsB.sub).toBe(b.id);
    expect(claimsB.act).toEqual({ sub: a.id });
    expect(claimsB.scope).toBeUndefined();

    const toC = await delegated(toB.token, c);
    expect(toC.delegation).toEqual({ depth: 3, chain: [a.id, b.id, c.id] });
    const claimsC = decodeJwt(toC.token);
    expect(claimsC.sub).toBe(c.id);
    expect(claimsC.act).toEqual({ sub: b.id, act: { sub: a.id } });

    const depth2 = await proxy(gateway, toB.token, 'GET', '/reports/1');
    expect(depth2.status).toBe(200);
    expect(depth2.headers.get('x-service-agent-id')).toBe(b.id);
    const depth3 = await proxy(gateway, toC.token, 'GET', '/reports/1');
    expect(depth3.status).toBe(403);
    expect(depth3.body).toMatchObject({ error: 'forbidden', policy: 'max-depth', reason: 'chains deeper than 2 are not allowed' });

    // The chain policy: B may delete on its own, not on behalf of A.
    expect((await proxy(gateway, b.token, 'DELETE', '/reports/1')).status).toBe(200);
    const onBehalf = await proxy(gateway, toB.token, 'DELETE', '/reports/1');
    expect(onBehalf.status).toBe(403);
    expect(onBehalf.body.policy).toBe('no-delete-for-planner');

    const ofC = await auditEntries(gateway, org, `agentId=${c.id}&source=proxy`, 1);
    expect(ofC).toEqual([expect.objectContaining({ decision: 'deny', policyName: 'max-depth', status: 403, delegationChain: [a.id, b.id, c.id] })]);
    const ofB = await auditEntries(gateway, org, `agentId=${b.id}&source=proxy`, 3);
    expect(ofB.map((entry) => [entry.action, entry.decision, entry.delegationChain])).toEqual([
      ['delete:reports/1', 'deny', [a.id, b.id]],
      ['delete:reports/1', 'allow', null],
      ['read:reports/1', 'allow', [a.id, b.id]],
    ]);
  });

  it('records each delegation in the audit trail with its chain', async () => {
    const { org, agents } = await organization(['lead', 'helper']);
    const [a, b] = agents;
    const toB = await delegated(a.token, b, { scope: ['read:*'], ttl: '1h' });
    const [event] = await auditEntries(gateway, org, `action=admin:identity.delegate`, 1);
    expect(event).toMatchObject({ source: 'admin', agentId: b.id });
    expect(event.details).toEqual({ actor: `agent:${a.id}`, delegatedBy: a.id, chain: [a.id, b.id], scope: ['read:*'], expiresAt: toB.expiresAt });
  });

  it('refuses to delegate to oneself, back into the chain, to another organization, to a revoked agent, or beyond 8 agents', async () => {
    const { org, agents } = await organization(['a', 'b', 'gone']);
    const [a, b, gone] = agents;
    const other = await organization(['stranger']);

    const self = await delegate(a.token, { agentId: a.id });
    expect(self.status).toBe(400);
    expect(self.body.message).toBe(`agent ${a.id} is already in the delegation chain (${a.id})`);

    const toB = await delegated(a.token, b);
    const cycle = await delegate(toB.token, { agentId: a.id });
    expect(cycle.status).toBe(400);
    expect(cycle.body.message).toBe(`agent ${a.id} is already in the delegation chain (${a.id} > ${b.id})`);

    const foreign = await delegate(a.token, { agentId: other.agents[0].id });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ error: 'not_found', message: `agent ${other.agents[0].id} not found` });

    await revokeAgent(gateway, org, gone.id);
    const revoked = await delegate(a.token, { agentId: gone.id });
    expect(revoked.status).toBe(409);
    expect(revoked.body).toEqual({ error: 'agent_revoked', message: `agent ${gone.id} is revoked and cannot be delegated to` });

    const long = await organization(['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7', 'n8']);
    let token = long.agents[0].token;
    for (const next of long.agents.slice(1, 8)) token = (await delegated(token, next)).token;
    const ninth = await delegate(token, { agentId: long.agents[8].id });
    expect(ninth.status).toBe(400);
    expect(ninth.body.message).toBe('a delegation chain holds at most 8 agents');
  });

  it('answers bad input with a 400 naming the field, and no or a bad token with 401', async () => {
    const { agents } = await organization(['a', 'b']);
    const [a, b] = agents;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, 'agentId must be a string'],
      [{ agentId: b.id, ttl: 'forever' }, 'ttl must be a duration like 30s, 15m, 2h or 1d'],
      [{ agentId: b.id, scope: 'read:*' }, 'scope must be an array'],
      [{ agentId: b.id, scope: [] }, 'scope must name at least one action glob'],
      [{ agentId: b.id, scope: ['read:[a]'] }, `scope glob "read:[a]": unsupported glob character '[': only * is a wildcard`],
      [{ agentId: b.id, extra: 1 }, 'unknown field extra'],
      [{ agentId: b.id, ttl: '0s' }, 'ttl must be at least 1s'],
      [{ agentId: b.id, ttl: null }, 'ttl must be a string'],
      [{ agentId: b.id, scope: null }, 'scope must be an array'],
    ];
    for (const [body, message] of cases) {
      const response = await delegate(a.token, body);
      expect(response.status).toBe(400);
      expect(response.body.message).toContain(message);
    }
    expect((await delegate(undefined, { agentId: b.id })).body).toEqual({ error: 'unauthorized', message: 'Missing Authorization: Bearer <agent token>' });
    expect((await delegate('not-a-token', { agentId: b.id })).status).toBe(401);
  });
});

describe('rights (RFC 8693 token exchange)', () => {
  it('hands the delegator a grant, never a token acting as its delegate: only the delegate redeems it, with its own token', async () => {
    const { org } = await organization([]);
    const low = await createAgent(gateway, org, { name: 'intern', trustTier: 'unverified' });
    const high = await createAgent(gateway, org, { name: 'admin-bot', trustTier: 'privileged' });
    const other = await createAgent(gateway, org, { name: 'bystander', trustTier: 'privileged' });

    const granted = await delegate(low.token, { agentId: high.id });
    expect(granted.status).toBe(201);
    expect(granted.body).not.toHaveProperty('token');
    // The grant is no agent token: the proxy refuses it.
    expect((await proxy(gateway, granted.body.grant, 'GET', '/admin/users')).status).toBe(401);
    // Neither the delegator nor a third agent can redeem it.
    for (const intruder of [low, other]) {
      const stolen = await redeem(granted.body.grant, intruder.token);
      expect(stolen.status).toBe(403);
      expect(stolen.body.message).toBe('The grant names another agent: only the delegate it names can redeem it, with its own token');
    }
    const asDelegator = await redeem(granted.body.grant, granted.body.grant);
    expect(asDelegator.status).toBe(400);
    expect(asDelegator.body.message).toMatch(/^actor_token is not a valid agent token/);
    expect((await redeem(granted.body.grant, high.token, { grant_type: 'client_credentials' })).body.message).toBe(`grant_type must be ${TOKEN_EXCHANGE}`);
    expect((await redeem(`${granted.body.grant}x`, high.token)).body.message).toBe('subject_token is not a valid delegation grant');

    const exchanged = await redeem(granted.body.grant, high.token);
    expect(exchanged.status).toBe(200);
    expect(exchanged.body).toMatchObject({ issued_token_type: 'urn:ietf:params:oauth:token-type:jwt', token_type: 'Bearer', agentId: high.id, trustTier: 'unverified', delegation: { depth: 2, chain: [low.id, high.id] } });
    expect(decodeJwt(exchanged.body.access_token)).toMatchObject({ sub: high.id, act: { sub: low.id }, tier: 'unverified' });
    // A delegated token cannot serve as the actor of another exchange either.
    const viaDelegated = await redeem((await delegate(low.token, { agentId: high.id })).body.grant, exchanged.body.access_token);
    expect(viaDelegated.body.message).toBe('actor_token must be the delegate’s own agent token, not a delegated one');
  });

  it('decides a delegated token with the lowest tier of its chain and for every agent of it, at the proxy', async () => {
    const { org } = await organization([]);
    const low = await createAgent(gateway, org, { name: 'intern', trustTier: 'unverified', tags: ['quarantined'] });
    const high = await createAgent(gateway, org, { name: 'admin-bot', trustTier: 'privileged' });
    await putPolicies(gateway, org, [
      { name: 'admins-only', action: '*:admin/*', condition: 'agent.trust_tier < privileged', reason: 'admin paths need a privileged agent' },
      { name: 'quarantine', action: 'write:*', condition: '"quarantined" in agent.tags', reason: 'quarantined agents cannot write' },
    ]);
    expect((await proxy(gateway, high.token, 'GET', '/admin/users')).status).toBe(200);
    expect((await proxy(gateway, high.token, 'POST', '/reports/1')).status).toBe(200);

    const onBehalf = await delegated(low.token, high);
    expect(onBehalf.trustTier).toBe('unverified');
    const admin = await proxy(gateway, onBehalf.token, 'GET', '/admin/users');
    expect(admin.status).toBe(403);
    expect(admin.body.policy).toBe('admins-only');
    // The delegator's tag holds too: the delegate writes nothing the delegator could not.
    const write = await proxy(gateway, onBehalf.token, 'POST', '/reports/1');
    expect(write.status).toBe(403);
    expect(write.body.policy).toBe('quarantine');
    const [entry] = await auditEntries(gateway, org, `agentId=${high.id}&source=proxy&decision=deny`, 2);
    expect(entry).toMatchObject({ trustTier: 'unverified', delegationChain: [low.id, high.id] });

    // Raising the delegator later raises the token with it; the delegate's own tier is the ceiling.
    await call(gateway.url, 'PATCH', `/admin/agents/${low.id}`, { adminToken: org.adminToken, body: { trustTier: 'privileged', tags: [] } });
    expect((await proxy(gateway, onBehalf.token, 'GET', '/admin/users')).status).toBe(200);
  });
});

describe('lifetime', () => {
  it('never outlives its parent: a ttl past the parent’s expiry is refused, the default is the parent’s expiry', async () => {
    const { agents } = await organization(['a', 'b', 'c']);
    const [a, b, c] = agents;
    const beyondRoot = await delegate(a.token, { agentId: b.id, ttl: '25h' });
    expect(beyondRoot.status).toBe(400);
    expect(beyondRoot.body.message).toMatch(/^ttl 25h would outlive the delegating token, which expires at \d{4}-\d\d-\d\dT/);

    const toB = await delegated(a.token, b, { ttl: '1h' });
    const parentExp = decodeJwt(toB.token).exp!;
    expect(new Date(parentExp * 1000).toISOString()).toBe(toB.expiresAt);
    expect(Math.abs(Date.parse(toB.expiresAt) - Date.now() - 3_600_000)).toBeLessThan(60_000);

    const outliving = await delegate(toB.token, { agentId: c.id, ttl: '2h' });
    expect(outliving.status).toBe(400);
    expect(outliving.body.message).toBe(`ttl 2h would outlive the delegating token, which expires at ${new Date(parentExp * 1000).toISOString()}`);

    const shorter = await delegated(toB.token, c, { ttl: '30m' });
    expect(decodeJwt(shorter.token).exp).toBeLessThanOrEqual(parentExp);
    const inherited = await delegated(toB.token, c);
    expect(decodeJwt(inherited.token).exp).toBe(parentExp);
    expect(inherited.expiresAt).toBe(new Date(parentExp * 1000).toISOString());
    expect(inherited.tokenExpiresAt).toBe(inherited.expiresAt);
  });
});

describe('scope', () => {
  it('denies a request outside the scope at the proxy without consulting policy (policy delegation-scope)', async () => {
    const { org, agents } = await organization(['a', 'b']);
    const [a, b] = agents;
    // Counts every request it is consulted for: one slot a minute.
    await putPolicies(gateway, org, [{ name: 'one-a-minute', condition: 'rate_limit(per_agent, 1, 1m)', reason: 'one request a minute' }]);
    const toB = await delegated(a.token, b, { scope: ['read:*'] });
    expect(toB.scope).toEqual(['read:*']);
    expect(decodeJwt(toB.token).scope).toEqual(['read:*']);
    const before = upstream.requests.length;

    const write = await proxy(gateway, toB.token, 'POST', '/reports/1');
    expect(write.status).toBe(403);
    expect(write.headers.get('x-service-policy')).toBe('delegation-scope');
    expect(write.body).toMatchObject({
      error: 'forbidden',
      policy: 'delegation-scope',
      reason: 'action write:reports/1 is outside the delegated scope (read:*)',
      action: 'write:reports/1',
    });
    // Naming an in-scope action does not widen the token: its own verb and path must be in scope too.
    const disguised = await proxy(gateway, toB.token, 'DELETE', '/reports/1', { 'x-service-action': 'read:reports/1' });
    expect(disguised.status).toBe(403);
    expect(disguised.body.reason).toBe('action delete:reports/1 is outside the delegated scope (read:*)');
    expect(upstream.requests.length).toBe(before);

    // The rate limit was never consulted for the two denials: its one slot is still free.
    expect((await proxy(gateway, toB.token, 'GET', '/reports/1')).status).toBe(200);
    const limited = await proxy(gateway, toB.token, 'GET', '/reports/2');
    expect(limited.status).toBe(429);

    const entries = await auditEntries(gateway, org, `agentId=${b.id}&source=proxy`, 4);
    expect(entries.map((entry) => [entry.action, entry.decision, entry.policyName, entry.rule, entry.status, entry.delegationChain])).toEqual([
      ['read:reports/2', 'deny', 'one-a-minute', 'one-a-minute-rule', 429, [a.id, b.id]],
      ['read:reports/1', 'allow', 'one-a-minute', null, 200, [a.id, b.id]],
      ['read:reports/1', 'deny', 'delegation-scope', null, 403, [a.id, b.id]],
      ['write:reports/1', 'deny', 'delegation-scope', null, 403, [a.id, b.id]],
    ]);
  });

  it('narrows at each hop, refuses widening, and a hop without a scope keeps its parent’s', async () => {
    const { agents } = await organization(['a', 'b', 'c']);
    const [a, b, c] = agents;
    const toB = await delegated(a.token, b, { scope: ['read:*', 'write:drafts/*'] });

    const widened = await delegate(toB.token, { agentId: c.id, scope: ['read:*', 'write:*'] });
    expect(widened.status).toBe(400);
    expect(widened.body).toEqual({
      error: 'invalid_request',
      message: `scope glob "write:*" is not within the delegating token's scope (read:*, write:drafts/*): each hop can only narrow`,
    });
    expect((await delegate(toB.token, { agentId: c.id, scope: ['*'] })).status).toBe(400);

    const kept = await delegated(toB.token, c);
    expect(kept.scope).toEqual(['read:*', 'write:drafts/*']);

    const narrowed = await delegated(toB.token, c, { scope: ['read:reports/*'] });
    expect(narrowed.scope).toEqual(['read:reports/*']);
    expect((await proxy(gateway, narrowed.token, 'GET', '/reports/1')).status).toBe(200);
    const outside = await proxy(gateway, narrowed.token, 'GET', '/files/1');
    expect(outside.status).toBe(403);
    expect(outside.body.reason).toBe('action read:files/1 is outside the delegated scope (read:reports/*)');
    // B's own scope still allows what C's narrower one does not.
    expect((await proxy(gateway, toB.token, 'GET', '/files/1')).status).toBe(200);
    expect((await proxy(gateway, kept.token, 'POST', '/drafts/1')).status).toBe(200);
  });
});

describe('revocation', () => {
  it('ends a delegated token when any agent of its chain is revoked, and a revoked agent cannot delegate', async () => {
    const { org, agents } = await organization(['a', 'b', 'c']);
    const [a, b, c] = agents;
    const toB = await delegated(a.token, b);
    const toC = await delegated(toB.token, c);
    expect((await proxy(gateway, toC.token, 'GET', '/x')).status).toBe(200);

    await revokeAgent(gateway, org, a.id);
    for (const token of [toB.token, toC.token]) {
      const refused = await proxy(gateway, token, 'GET', '/x');
      expect(refused.status).toBe(401);
      expect(refused.body).toMatchObject({ error: 'unauthorized', message: `Delegating agent ${a.id} has been revoked` });
    }
    // The delegates' own tokens are untouched.
    expect((await proxy(gateway, b.token, 'GET', '/x')).status).toBe(200);
    expect((await proxy(gateway, c.token, 'GET', '/x')).status).toBe(200);

    const byRevoked = await delegate(a.token, { agentId: c.id });
    expect(byRevoked.status).toBe(401);
    expect(byRevoked.body.message).toBe('Agent has been revoked');
    const throughRevoked = await delegate(toB.token, { agentId: c.id });
    expect(throughRevoked.status).toBe(401);
  });

  it('ends it when the middle of the chain is revoked', async () => {
    const { org, agents } = await organization(['a', 'b', 'c']);
    const [a, b, c] = agents;
    const toC = await delegated((await delegated(a.token, b)).token, c);
    await revokeAgent(gateway, org, b.id);
    const refused = await proxy(gateway, toC.token, 'GET', '/x');
    expect(refused.status).toBe(401);
    expect(refused.body.message).toBe(`Delegating agent ${b.id} has been revoked`);
  });
});

/**
 * The same limits offline: the decision core on in-memory sources and a bundle's public key,
 * as the edge sidecar runs it. The token alone proves the chain and its scope.
 */
describe('offline, on the decision core without a database', () => {
  const ORG = 'org_edge';
  const ISSUER = 'https://gateway.example';
  const agents = new Map<string, AgentSnapshot>();
  const log: AuditRecord[] = [];
  let policyLookups = 0;
  let sign: (subject: string, claims: Record<string, unknown>) => Promise<string>;
  let authenticator: AgentAuthenticator;
  let decisions: DecisionService;

  beforeAll(async () => {
    const { privateKey, publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'bundle-key', alg: 'EdDSA' };
    sign = (subject, claims) =>
      new SignJWT({ org: ORG, ...claims }).setProtectedHeader({ alg: 'EdDSA', kid: 'bundle-key' }).setSubject(subject).setIssuer(ISSUER).setIssuedAt().setExpirationTime('1h').sign(privateKey);
    const policies: LoadedPolicies = {
      version: 3,
      set: compilePolicies([{ name: 'max-depth', rules: [{ condition: 'delegation.depth > 2', action: 'deny', reason: 'too deep' }] }], { namespace: ORG }),
    };
    for (const id of ['agent_a', 'agent_b', 'agent_c']) agents.set(id, agentSnapshot({ id, orgId: ORG, name: id, trustTier: 'verified', tags: [], revoked: false }));
    const moduleRef = await Test.createTestingModule({
      imports: [
        LoggingModule.forRoot(pino({ level: 'silent' })),
        DecisionCoreModule.register({
          sources: [
            { provide: POLICY_SOURCE, useValue: { get: () => (policyLookups++, policies) } },
            { provide: AGENT_SOURCE, useValue: { get: (id: string) => agents.get(id) ?? null } },
            { provide: VERIFICATION_KEYS, useValue: await JwkSet.of([jwk]) },
            { provide: USAGE_GATE, useValue: { tryConsume: () => true } },
            { provide: DECISION_LOG, useValue: { record: (entry: AuditRecord) => log.push(entry), whenWritable: () => undefined } },
            { provide: RATE_LIMITER, useValue: new SlidingWindowLimiter() },
            { provide: DECISION_SETTINGS, useValue: { mode: 'enforce', tokenIssuer: ISSUER } },
          ],
        }),
      ],
    }).compile();
    authenticator = moduleRef.get(AgentAuthenticator);
    decisions = moduleRef.get(DecisionService);
  });

  function request(action: string) {
    const [verb, resource] = action.split(':');
    return { source: 'sidecar' as const, traceId: 't', action, resource, plugin: 'http', function: verb, args: {}, context: {} };
  }

  it('denies outside the scope without a policy lookup, reads the depth, and records the chain', async () => {
    const scoped = await authenticator.authenticate(`Bearer ${await sign('agent_b', { act: { sub: 'agent_a' }, scope: ['read:*'] })}`);
    expect(scoped.delegation).toMatchObject({ depth: 2, chain: ['agent_a', 'agent_b'], scope: ['read:*'] });
    const outside = await decisions.check(scoped, request('write:files/1'));
    expect(outside.decision).toEqual({ effect: 'deny', policy: 'delegation-scope', rule: null, reason: 'action write:files/1 is outside the delegated scope (read:*)' });
    expect(outside.policyVersion).toBe(0);
    expect(policyLookups).toBe(0);
    expect((await decisions.check(scoped, request('read:files/1'))).decision.effect).toBe('allow');
    expect(policyLookups).toBe(1);

    const deep = await authenticator.authenticate(`Bearer ${await sign('agent_c', { act: { sub: 'agent_b', act: { sub: 'agent_a' } } })}`);
    expect((await decisions.check(deep, request('read:files/1'))).decision).toMatchObject({ effect: 'deny', policy: 'max-depth' });
    expect(log.map((entry) => [entry.action, entry.policyName, entry.status, entry.delegationChain])).toEqual([
      ['write:files/1', 'delegation-scope', 403, ['agent_a', 'agent_b']],
      ['read:files/1', 'max-depth', 200, ['agent_a', 'agent_b']],
      ['read:files/1', 'max-depth', 403, ['agent_a', 'agent_b', 'agent_c']],
    ]);
  });

  it('decides with the lowest tier of the chain, as the sidecar does', async () => {
    const tiered = compilePolicies([{ name: 'trusted-only', rules: [{ condition: 'agent.trust_tier < trusted', action: 'deny', reason: 'needs trusted' }] }], { namespace: ORG });
    agents.set('agent_low', agentSnapshot({ id: 'agent_low', orgId: ORG, name: 'low', trustTier: 'unverified', tags: [], revoked: false }));
    agents.set('agent_high', agentSnapshot({ id: 'agent_high', orgId: ORG, name: 'high', trustTier: 'privileged', tags: [], revoked: false }));
    const own = await authenticator.authenticate(`Bearer ${await sign('agent_high', {})}`);
    const onBehalf = await authenticator.authenticate(`Bearer ${await sign('agent_high', { act: { sub: 'agent_low' } })}`);
    expect(onBehalf.agent.trustTier).toBe('unverified');
    const env = { limiter: new SlidingWindowLimiter(), nowMs: Date.now() };
    expect((await tiered.evaluate({ ...baseInput(), agent: own.agent.facts }, env)).effect).toBe('allow');
    expect((await tiered.evaluate({ ...baseInput(), agent: onBehalf.agent.facts }, env)).effect).toBe('deny');
  });

  function baseInput() {
    return { action: 'read:x', resource: 'x', plugin: 'http', function: 'read', args: {}, context: {}, delegation: { depth: 1, chain: [] } };
  }

  it('refuses a token whose delegator the bundle shows revoked, or does not know', async () => {
    agents.set('agent_a', agentSnapshot({ id: 'agent_a', orgId: ORG, name: 'a', trustTier: 'verified', tags: [], revoked: true }));
    const token = await sign('agent_b', { act: { sub: 'agent_a' } });
    await expect(authenticator.authenticate(`Bearer ${token}`)).rejects.toMatchObject({ code: 'unauthorized', message: 'Delegating agent agent_a has been revoked' });
    const unknown = await sign('agent_b', { act: { sub: 'agent_elsewhere' } });
    await expect(authenticator.authenticate(`Bearer ${unknown}`)).rejects.toMatchObject({ code: 'unauthorized', message: 'Invalid or expired token' });
    // A malformed scope claim limits to nothing rather than to no limit.
    const malformed = await authenticator.authenticate(`Bearer ${await sign('agent_c', { scope: 'read:*' })}`);
    expect((await decisions.check(malformed, request('read:files/1'))).decision.policy).toBe('delegation-scope');
  });
});
