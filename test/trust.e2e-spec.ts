import { call, TestResponse } from './support/http-client';
import { auditEntries, AuditEntryView, createAgent, proxy, putPolicies, TestAgent } from './support/org-fixtures';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * What an agent sends may only narrow what it is allowed (docs/security.md): declared actions,
 * bodies of any type, the forwarding headers; counters and audit links stay within their tenant
 * and their decision.
 */

let upstream: TestUpstream;
let gateway: TestGateway;
/** A second instance on the same database, which trusts loopback as its load balancer. */
let behindProxy: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url });
  behindProxy = await startGateway({ UPSTREAM_URL: upstream.url, TRUSTED_PROXIES: 'loopback' });
});
afterAll(async () => {
  await Promise.all([gateway.close(), behindProxy.close()]);
  await upstream.close();
});

async function orgWithAgent(tier = 'verified'): Promise<{ org: TestOrganization; agent: TestAgent }> {
  const org = await createOrganization(gateway, 'enterprise', 'Trust org');
  return { org, agent: await createAgent(gateway, org, { name: 'worker', trustTier: tier }) };
}

function send(token: string, method: string, path: string, body: string | Buffer | undefined, headers: Record<string, string> = {}): Promise<TestResponse> {
  return call(gateway.url, method, `/proxy${path}`, { bearer: token, body, headers });
}

describe('a declared action only narrows', () => {
  it('decides X-Service-Action together with the request’s own verb and path, and records both', async () => {
    const { org, agent } = await orgWithAgent();
    await putPolicies(gateway, org, [{ name: 'no-admin-writes', action: 'write:admin/*', condition: 'agent.trust_tier < privileged', reason: 'admin writes need a privileged agent' }]);
    const before = upstream.received('/admin/users').length;

    const disguised = await proxy(gateway, agent.token, 'POST', '/admin/users', { 'x-service-action': 'read:harmless' });
    expect(disguised.status).toBe(403);
    expect(disguised.body).toMatchObject({ policy: 'no-admin-writes', action: 'read:harmless' });
    expect(upstream.received('/admin/users').length).toBe(before);

    // A declared action that is itself denied denies too.
    const declaredDenied = await proxy(gateway, agent.token, 'GET', '/reports/1', { 'x-service-action': 'write:admin/x' });
    expect(declaredDenied.status).toBe(403);
    expect((await proxy(gateway, agent.token, 'GET', '/reports/1', { 'x-service-action': 'read:reports' })).status).toBe(200);

    const [entry] = await auditEntries(gateway, org, 'decision=deny&source=proxy', 2).then((entries) => entries.filter((e) => e.action === 'read:harmless'));
    expect(entry).toMatchObject({ action: 'read:harmless', policyName: 'no-admin-writes', details: { derivedAction: 'write:admin/users' } });
  });

  it('decides a PDP check on its plugin and function as well as on the action it names', async () => {
    const { org, agent } = await orgWithAgent();
    const key = await apiKey(org);
    await putPolicies(gateway, org, [{ name: 'no-mail', action: 'EmailPlugin.*', condition: 'agent.trust_tier < privileged', reason: 'no mail' }]);
    const named = await check(key, { agentId: agent.id, plugin: 'EmailPlugin', function: 'SendEmail', action: 'read:harmless' });
    expect(named.body).toMatchObject({ decision: 'deny', policy: 'no-mail' });
  });
});

describe('a body is read as the upstream may read it', () => {
  const REFUND = { name: 'big-refunds', action: 'write:refunds*', condition: 'args.amount > 100', reason: 'refunds over 100 need a person' };
  let token: string;
  let org: TestOrganization;

  beforeAll(async () => {
    const made = await orgWithAgent();
    ({ org } = made);
    token = made.agent.token;
    await putPolicies(gateway, org, [REFUND]);
  });

  it.each([
    ['application/json', '{"amount":5000}'],
    ['text/json', '{"amount":5000}'],
    ['text/plain', '{"amount":5000}'],
    ['no Content-Type', '{"amount":5000}'],
    ['application/x-www-form-urlencoded', 'amount=5000'],
    ['a JSON list (wrong type)', '{"amount":[5000]}'],
    ['a number with trailing text', '{"amount":"5000abc"}'],
  ])('denies a large amount sent as %s', async (type, body) => {
    const before = upstream.received('/refunds').length;
    const headers: Record<string, string> = type === 'no Content-Type' ? {} : { 'content-type': type.includes('/') ? type : 'application/json' };
    const response = await send(token, 'POST', '/refunds', Buffer.from(body), headers);
    expect(response.status).toBe(403);
    expect(response.body.policy).toBe('big-refunds');
    expect(upstream.received('/refunds').length).toBe(before);
  });

  it.each([
    ['the query and the body disagree', '/refunds?amount=5000', '{"amount":1}', 'application/json', 'argument "amount" is given in both the query and the body, with different values'],
    ['a JSON key is repeated', '/refunds', '{"amount":1,"amount":5000}', 'application/json', 'the JSON body repeats the key "amount"'],
    ['a key is repeated under an escape', '/refunds', '{"amount":1,"\\u0061mount":5000}', 'application/json', 'the JSON body repeats the key "amount"'],
    ['the body is multipart', '/refunds', '--b\r\nContent-Disposition: form-data; name="amount"\r\n\r\n5000\r\n--b--\r\n', 'multipart/form-data; boundary=b', 'a multipart body cannot be read by policies that read body fields; send JSON or a form'],
  ])('denies a request whose %s (policy request-integrity), and audits it', async (_what, path, body, type, reason) => {
    const before = upstream.received('/refunds').length;
    const response = await send(token, 'POST', path, Buffer.from(body), { 'content-type': type });
    expect(response.status).toBe(403);
    expect(response.body).toMatchObject({ policy: 'request-integrity', reason });
    expect(upstream.received('/refunds').length).toBe(before);
    expect(await deniedWith(org, reason)).toMatchObject({ policyName: 'request-integrity', status: 403 });
  });

  it('forwards what the policy allows, agreeing query and body, and opaque bodies untouched', async () => {
    expect((await send(token, 'POST', '/refunds', Buffer.from('{"amount":50}'), { 'content-type': 'application/json' })).status).toBe(200);
    expect((await send(token, 'POST', '/refunds?amount=50', Buffer.from('{"amount":50}'), { 'content-type': 'application/json' })).status).toBe(200);
    expect((await send(token, 'POST', '/refunds', Buffer.from('amount,5000\n'), { 'content-type': 'text/csv' })).status).toBe(200);
    const malformed = await send(token, 'POST', '/refunds', Buffer.from('{"amount":'), { 'content-type': 'application/json' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toBe('invalid_json');
  });
});

describe('rate limits are the organization’s own', () => {
  it('never lets one tenant spend another’s global budget', async () => {
    const first = await orgWithAgent();
    const second = await orgWithAgent();
    const limit = { name: 'one-a-minute', condition: 'rate_limit(global, 1, 1m)', reason: 'one request a minute' };
    await putPolicies(gateway, first.org, [limit]);
    await putPolicies(gateway, second.org, [limit]);
    expect((await proxy(gateway, first.agent.token, 'GET', '/x')).status).toBe(200);
    expect((await proxy(gateway, first.agent.token, 'GET', '/x')).status).toBe(429);
    expect((await proxy(gateway, second.agent.token, 'GET', '/x')).status).toBe(200);
  });
});

describe('what reaches the upstream', () => {
  it('keeps the gateway’s credentials and a client’s own X-Forwarded-For from it', async () => {
    const { agent } = await orgWithAgent();
    const headers = { 'x-admin-token': 'adm_secret', 'x-api-key': 'key_secret', cookie: 'session=secret', 'x-forwarded-for': '203.0.113.66' };
    expect((await proxy(gateway, agent.token, 'GET', '/headers-check/1', headers)).status).toBe(200);
    const [seen] = upstream.received('/headers-check/1');
    expect(seen.headers).not.toHaveProperty('x-admin-token');
    expect(seen.headers).not.toHaveProperty('x-api-key');
    expect(seen.headers).not.toHaveProperty('cookie');
    expect(seen.headers).not.toHaveProperty('authorization');
    expect(seen.headers['x-forwarded-for']).not.toContain('203.0.113.66');

    // Behind a configured proxy (TRUSTED_PROXIES=loopback), its X-Forwarded-For is kept.
    expect((await call(behindProxy.url, 'GET', '/proxy/headers-check/2', { bearer: agent.token, headers })).status).toBe(200);
    expect(upstream.received('/headers-check/2')[0].headers['x-forwarded-for']).toMatch(/^203\.0\.113\.66, /);
  });
});

describe('an outcome is linked only to the decision that stands behind it', () => {
  it('refuses, with a 400 naming the mismatch, an outcome of another agent, function or of a denied call', async () => {
    const { org, agent } = await orgWithAgent();
    const other = await createAgent(gateway, org, { name: 'other' });
    const key = await apiKey(org);
    await putPolicies(gateway, org, [{ name: 'no-mail', action: 'EmailPlugin.*', condition: 'agent.trust_tier < privileged', reason: 'no mail' }]);
    const read = (await check(key, { agentId: agent.id, plugin: 'FilePlugin', function: 'ReadFile' })).body;
    const mail = (await check(key, { agentId: agent.id, plugin: 'EmailPlugin', function: 'SendEmail' })).body;
    expect([read.decision, mail.decision]).toEqual(['allow', 'deny']);
    const outcome = (body: Record<string, unknown>, on = gateway) =>
      call(on.url, 'POST', '/v1/audit', { headers: { 'x-api-key': key }, body: { agentId: agent.id, plugin: 'FilePlugin', function: 'ReadFile', decision: 'allow', durationMs: 3, ...body } });

    const cases: Array<[Record<string, unknown>, string]> = [
      [{ decisionId: mail.decisionId }, `decisionId ${String(mail.decisionId)} is a decision on EmailPlugin.SendEmail, not FilePlugin.ReadFile`],
      [{ decisionId: mail.decisionId, plugin: 'EmailPlugin', function: 'SendEmail' }, `decisionId ${String(mail.decisionId)} denied the call: its outcome cannot be allow`],
      [{ decisionId: read.decisionId, agentId: other.id }, `decisionId ${String(read.decisionId)} is a decision for agent ${agent.id}, not ${other.id}`],
      [{ decisionId: 'aud_000000000000000000000000' }, 'decisionId aud_000000000000000000000000 names no decision of this organization'],
    ];
    for (const [body, message] of cases) {
      const refused = await outcome(body);
      expect([refused.status, refused.body.message]).toEqual([400, message]);
    }
    expect((await outcome({ decisionId: read.decisionId })).status).toBe(202);
    expect((await outcome({ decisionId: mail.decisionId, plugin: 'EmailPlugin', function: 'SendEmail', decision: 'deny' })).status).toBe(202);
    // Another instance finds the decision in the trail.
    expect((await outcome({ decisionId: read.decisionId }, behindProxy)).status).toBe(202);
    const crossed = await outcome({ decisionId: mail.decisionId }, behindProxy);
    expect(crossed.status).toBe(400);
  });
});

/** The audit entry of a denial with this reason, once it is written. */
async function deniedWith(org: TestOrganization, reason: string): Promise<AuditEntryView | undefined> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = (await auditEntries(gateway, org, 'decision=deny', 1)).find((entry) => entry.reason === reason);
    if (found !== undefined || Date.now() > deadline) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function apiKey(org: TestOrganization): Promise<string> {
  const response = await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'trust test' } });
  expect(response.status).toBe(201);
  return response.body.key;
}

function check(key: string, body: Record<string, unknown>): Promise<TestResponse> {
  return call(gateway.url, 'POST', '/v1/check', { headers: { 'x-api-key': key }, body });
}
