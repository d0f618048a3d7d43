import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import { decodeProtectedHeader, SignJWT } from 'jose';
import { DataSource } from 'typeorm';
import { call, TestResponse } from './support/http-client';
import { ownDatabase } from './support/own-database';
import { createOrganization, startGateway, TEST_PUBLIC_URL, TestGateway, TestOrganization } from './support/test-gateway';
import { EchoBody, rawRequest, startUpstream, TestUpstream } from './support/upstream';
import type { PlanId } from '../src/core/config/plans';

/** The governed proxy (docs/proxy.md; docs/policies.md "What a condition can read"). */

// jest-circus reads testTimeout only from the top-level config, not from the e2e project's entry.

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

interface Agent {
  id: string;
  name: string;
  token: string;
}

interface AuditEntry {
  traceId: string | null;
  agentId: string | null;
  action: string;
  method: string | null;
  path: string | null;
  decision: string;
  enforced: boolean;
  policyName: string | null;
  status: number | null;
  upstreamStatus: number | null;
}

interface Policy {
  name: string;
  action?: string;
  condition: string;
  reason?: string;
  effect?: 'deny' | 'allow';
}

let upstream: TestUpstream;
let gateway: TestGateway;
let traceSeq = 0;

beforeAll(async () => {
  upstream = await startUpstream();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

/** A unique trace id, so each test finds its own upstream requests and audit entries. */
function traceId(): string {
  return `proxy-test-${process.pid}-${++traceSeq}`;
}

async function createAgent(org: TestOrganization, body: Record<string, unknown> = {}, on: TestGateway = gateway): Promise<Agent> {
  const response = await call<Agent>(on.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'proxy-agent', ...body } });
  expect(response.status).toBe(201);
  return response.body;
}

/** A policy as the YAML an operator writes. */
function policyYaml({ name, action, condition, reason, effect = 'deny' }: Policy): string {
  return [
    `name: ${name}`,
    ...(action === undefined ? [] : [`match: { action: ${JSON.stringify(action)} }`]),
    'rules:',
    `  - name: ${name}-rule`,
    `    condition: ${JSON.stringify(condition)}`,
    `    action: ${effect}`,
    `    reason: ${JSON.stringify(reason ?? `${name} refuses`)}`,
    '',
  ].join('\n');
}

async function putPolicies(org: TestOrganization, policies: Policy[], on: TestGateway = gateway): Promise<void> {
  for (const policy of policies) {
    const response = await call(on.url, 'PUT', `/admin/policies/${policy.name}`, {
      adminToken: org.adminToken,
      body: policyYaml(policy),
      headers: { 'content-type': 'application/yaml' },
    });
    expect([200, 201]).toContain(response.status);
  }
}

/** An organization with one agent and these policies. */
async function setup(policies: Policy[] = [], plan: PlanId = 'enterprise', on: TestGateway = gateway): Promise<{ org: TestOrganization; agent: Agent }> {
  const org = await createOrganization(on, plan, 'Proxy org');
  await putPolicies(org, policies, on);
  return { org, agent: await createAgent(org, {}, on) };
}

function proxy<T = Record<string, unknown>>(
  agent: Agent | null,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: unknown; on?: TestGateway } = {},
): Promise<TestResponse<T>> {
  return call<T>((options.on ?? gateway).url, method, `/proxy${path}`, { bearer: agent?.token, headers: options.headers, body: options.body });
}

/** The upstream requests carrying this trace id. */
function receivedWithTrace(id: string) {
  return upstream.requests.filter((request) => request.headers['x-trace-id'] === id);
}

/** Polls the audit trail until `count` entries match the query (entries are written asynchronously). */
async function auditEntries(org: TestOrganization, query: string, count: number, on: TestGateway = gateway): Promise<AuditEntry[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const response = await call<{ entries: AuditEntry[] }>(on.url, 'GET', `/admin/audit?limit=1000&${query}`, { adminToken: org.adminToken });
    expect(response.status).toBe(200);
    if (response.body.entries.length >= count || Date.now() > deadline) return response.body.entries;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function expectDecisionHeaders(response: TestResponse, decision: 'allow' | 'deny', policy: string, agent: Agent, trace?: string): void {
  expect(response.headers.get('x-service-decision')).toBe(decision);
  expect(response.headers.get('x-service-policy')).toBe(policy);
  expect(response.headers.get('x-service-agent-id')).toBe(agent.id);
  if (trace !== undefined) expect(response.headers.get('x-service-trace-id')).toBe(trace);
  else expect(response.headers.get('x-service-trace-id')).toMatch(/^\S+$/);
}

describe('action mapping', () => {
  const verbs: Policy[] = ['read', 'write', 'delete'].map((verb) => ({ name: `no-${verb}-secret`, action: `${verb}:secret*`, condition: 'true' }));
  const table: Array<[method: string, verb: string]> = [
    ['GET', 'read'],
    ['HEAD', 'read'],
    ['OPTIONS', 'read'],
    ['POST', 'write'],
    ['PUT', 'write'],
    ['PATCH', 'write'],
    ['DELETE', 'delete'],
  ];

  it.each(table)('%s maps to %s:<path>, seen by policies and recorded in the audit trail', async (method, verb) => {
    const { org, agent } = await setup(verbs);
    const denied = await proxy(agent, method, '/secret/file.txt');
    expect(denied.status).toBe(403);
    expectDecisionHeaders(denied, 'deny', `no-${verb}-secret`, agent);
    if (method !== 'HEAD') expect(denied.body).toMatchObject({ error: 'forbidden', policy: `no-${verb}-secret`, action: `${verb}:secret/file.txt` });

    const trace = traceId();
    const allowed = await proxy(agent, method, '/public/file.txt', { headers: { 'x-trace-id': trace } });
    expect(allowed.status).toBe(200);
    expectDecisionHeaders(allowed, 'allow', 'default', agent, trace);
    expect(receivedWithTrace(trace)).toMatchObject([{ method, url: '/public/file.txt' }]);

    const entries = await auditEntries(org, `source=proxy&agentId=${agent.id}`, 2);
    expect(entries.map((entry) => [entry.action, entry.decision, entry.method]).sort()).toEqual([
      [`${verb}:public/file.txt`, 'allow', method],
      [`${verb}:secret/file.txt`, 'deny', method],
    ]);
  });

  it('decodes escapes of unreserved characters before policies see the path: /%61dmin is /admin, denied as it', async () => {
    const { agent } = await setup([{ name: 'no-admin', action: '*admin*', condition: 'true' }]);
    const denied = await proxy(agent, 'GET', '/%61dmin/users');
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ policy: 'no-admin', action: 'read:admin/users' });

    const trace = traceId();
    const allowed = await proxy(agent, 'GET', '/caf%c3%a9/%7Eme', { headers: { 'x-trace-id': trace } });
    expect(allowed.status).toBe(200);
    expect(receivedWithTrace(trace)).toMatchObject([{ url: '/caf%C3%A9/~me' }]);
  });

  it('X-Service-Action replaces the computed action', async () => {
    const { org, agent } = await setup([{ name: 'no-transfers', action: 'payments:transfer*', condition: 'true' }]);
    const denied = await proxy(agent, 'GET', '/anything', { headers: { 'x-service-action': 'payments:transfer-out' } });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ policy: 'no-transfers', action: 'payments:transfer-out' });

    const allowed = await proxy(agent, 'GET', '/anything', { headers: { 'x-service-action': 'payments:lookup' } });
    expect(allowed.status).toBe(200);
    const entries = await auditEntries(org, `source=proxy&agentId=${agent.id}`, 2);
    expect(entries.map((entry) => entry.action).sort()).toEqual(['payments:lookup', 'payments:transfer-out']);
  });
});

describe('forwarding', () => {
  it('forwards /proxy/a/b?x=1 to UPSTREAM_URL/a/b?x=1 with method, query and body', async () => {
    const { agent } = await setup();
    const trace = traceId();
    const response = await proxy<EchoBody>(agent, 'PUT', '/a/b?x=1&y=two%20words&x=3', {
      headers: { 'x-trace-id': trace, 'content-type': 'text/plain', 'x-end-to-end': 'yes' },
      body: 'hello upstream',
    });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ method: 'PUT', url: '/a/b?x=1&y=two%20words&x=3', body: 'hello upstream' });
    expect(response.body.headers).toMatchObject({ 'content-type': 'text/plain', 'x-end-to-end': 'yes', 'content-length': '14' });
    expect(receivedWithTrace(trace)).toHaveLength(1);
  });

  it.each([201, 404, 500])('passes the upstream status %i through with its body', async (status) => {
    const { agent } = await setup();
    const response = await proxy(agent, 'POST', `/status/${status}`, { body: { any: 'thing' } });
    expect(response.status).toBe(status);
    expect(response.body).toEqual({ upstreamStatus: status, path: `/status/${status}` });
    expect(response.headers.get('x-upstream-status')).toBe(String(status));
    expectDecisionHeaders(response, 'allow', 'default', agent);
  });

  it('names the first applicable policy on allow, and the denying policy on deny', async () => {
    const { agent } = await setup([
      { name: 'watch-reports', action: 'read:reports*', condition: 'args.path contains "never-there"' },
      { name: 'no-drafts', action: 'read:reports/drafts*', condition: 'true' },
    ]);
    const allowed = await proxy(agent, 'GET', '/reports/2026');
    expect(allowed.status).toBe(200);
    expectDecisionHeaders(allowed, 'allow', 'watch-reports', agent);
    const denied = await proxy(agent, 'GET', '/reports/drafts/1');
    expect(denied.status).toBe(403);
    expectDecisionHeaders(denied, 'deny', 'no-drafts', agent);
  });

  it('propagates the client X-Trace-ID to the upstream, with a traceparent, and returns it', async () => {
    const { agent } = await setup();
    const trace = traceId();
    const response = await proxy(agent, 'GET', '/traced', { headers: { 'x-trace-id': trace } });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-service-trace-id')).toBe(trace);
    const [received] = receivedWithTrace(trace);
    expect(received.headers.traceparent).toMatch(TRACEPARENT);

    const w3c = 'a'.repeat(16) + '0123456789abcdef';
    const hex = await proxy(agent, 'GET', '/traced', { headers: { 'x-trace-id': w3c } });
    expect(hex.headers.get('x-service-trace-id')).toBe(w3c);
    expect(TRACEPARENT.exec(receivedWithTrace(w3c)[0].headers.traceparent as string)?.[1]).toBe(w3c);
  });

  it('takes the trace id of a W3C traceparent when there is no X-Trace-ID', async () => {
    const { agent } = await setup();
    const w3c = '4bf92f3577b34da6a3ce929d0e0e4736';
    const response = await proxy(agent, 'GET', '/w3c', { headers: { traceparent: `00-${w3c}-00f067aa0ba902b7-01` } });
    expect(response.headers.get('x-service-trace-id')).toBe(w3c);
    const [received] = receivedWithTrace(w3c);
    expect(TRACEPARENT.exec(received.headers.traceparent as string)?.[1]).toBe(w3c);
  });

  it('replaces a malformed X-Trace-ID with a generated one', async () => {
    const { agent } = await setup();
    const response = await proxy(agent, 'GET', '/bad-trace', { headers: { 'x-trace-id': 'not a valid id; x=1' } });
    expect(response.status).toBe(200);
    const generated = response.headers.get('x-service-trace-id')!;
    expect(generated).toMatch(/^[0-9a-f]{32}$/);
    expect(receivedWithTrace(generated)).toHaveLength(1);
  });

  it('generates a trace id when the client sends none', async () => {
    const { agent } = await setup();
    const first = await proxy(agent, 'GET', '/untraced');
    const second = await proxy(agent, 'GET', '/untraced');
    const generated = first.headers.get('x-service-trace-id')!;
    expect(generated).toMatch(/^[0-9a-f]{32}$/);
    expect(second.headers.get('x-service-trace-id')).not.toBe(generated);
    const [received] = receivedWithTrace(generated);
    expect(received.url).toBe('/untraced');
    expect(TRACEPARENT.exec(received.headers.traceparent as string)?.[1]).toBe(generated);
  });

  it('never forwards the agent token, drops hop-by-hop request headers and adds X-Forwarded-*', async () => {
    const { agent } = await setup();
    const trace = traceId();
    const { hostname, port } = new URL(gateway.url);
    const response = await rawRequest(gateway.url, '/proxy/hop', {
      headers: {
        authorization: `Bearer ${agent.token}`,
        'x-trace-id': trace,
        connection: 'keep-alive, x-hop-only',
        'x-hop-only': 'listed in Connection',
        'keep-alive': 'timeout=5',
        te: 'trailers',
        upgrade: 'h2c',
        'proxy-authorization': 'Basic cHJveHk6c2VjcmV0',
        'x-forwarded-for': '203.0.113.7',
        'x-end-to-end': 'kept',
      },
    });
    expect(response.status).toBe(200);
    const [received] = receivedWithTrace(trace);
    const names = Object.keys(received.headers);
    for (const dropped of ['authorization', 'keep-alive', 'te', 'upgrade', 'proxy-authorization', 'x-hop-only']) expect(names).not.toContain(dropped);
    expect(String(received.headers.connection ?? '')).not.toContain('x-hop-only');
    expect(JSON.stringify(received.headers)).not.toContain(agent.token);
    expect(received.headers['x-end-to-end']).toBe('kept');
    // A client's own X-Forwarded-For is not believed (no TRUSTED_PROXIES): the gateway names the client itself.
    expect(received.headers['x-forwarded-for']).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
    expect(received.headers['x-forwarded-proto']).toBe('http');
    expect(received.headers['x-forwarded-host']).toBe(`${hostname}:${port}`);
    expect(received.headers.host).toBe(new URL(upstream.url).host);
  });

  it('drops hop-by-hop response headers and keeps end-to-end ones', async () => {
    const { agent } = await setup();
    const response = await rawRequest(gateway.url, '/proxy/headers', { headers: { authorization: `Bearer ${agent.token}` } });
    expect(response.status).toBe(200);
    expect(response.body.toString()).toBe('headers');
    expect(response.headers['x-end-to-end']).toBe('kept');
    expect(response.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/']);
    expect(response.headers['x-custom']).toBeUndefined();
    expect(response.headers['keep-alive']).toBeUndefined();
    expect(String(response.headers.connection)).not.toContain('x-custom');
    expect(response.headers['x-service-decision']).toBe('allow');
  });

  it("replaces an upstream's own decision headers with the gateway's", async () => {
    const { agent } = await setup();
    const response = await rawRequest(gateway.url, '/proxy/headers', { headers: { authorization: `Bearer ${agent.token}` } });
    expect(response.headers['x-service-agent-id']).toBe(agent.id);
    expect(response.headers['x-service-trace-id']).not.toBe('from-upstream');
    expect(response.headers['x-service-trace-id']).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('authentication', () => {
  let org: TestOrganization;
  let agent: Agent;

  beforeAll(async () => {
    ({ org, agent } = await setup());
  });

  async function foreignKeyToken(): Promise<string> {
    const { privateKey } = generateKeyPairSync('ed25519');
    const { kid } = decodeProtectedHeader(agent.token);
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ name: agent.name, trust: 'privileged', tier: 'privileged', tags: [], org: org.id })
      .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'JWT' })
      .setSubject(agent.id)
      .setIssuer(TEST_PUBLIC_URL)
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .sign(privateKey);
  }

  const cases: Array<[what: string, authorization: () => Promise<string | undefined>]> = [
    ['a missing token', () => Promise.resolve(undefined)],
    ['a malformed header', () => Promise.resolve(`Basic ${agent.token}`)],
    ['a bare Bearer', () => Promise.resolve('Bearer')],
    ['a garbage token', () => Promise.resolve('Bearer not.a.jwt')],
    ['a token signed by another key', async () => `Bearer ${await foreignKeyToken()}`],
  ];

  it.each(cases)('answers 401 unauthorized for %s, and the upstream sees nothing', async (_what, authorization) => {
    const trace = traceId();
    const value = await authorization();
    const response = await call(gateway.url, 'GET', '/proxy/private', { headers: { 'x-trace-id': trace, ...(value === undefined ? {} : { authorization: value }) } });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ error: 'unauthorized', message: expect.any(String) });
    expect(receivedWithTrace(trace)).toHaveLength(0);
  });

  it('answers 401 for a copy of an accepted token with its claims altered and its signature kept', async () => {
    expect((await proxy(agent, 'GET', '/accepted')).status).toBe(200);
    const [header, payload, signature] = agent.token.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...claims, tier: 'privileged', trust: 'privileged' })).toString('base64url');
    const trace = traceId();
    const response = await call(gateway.url, 'GET', '/proxy/private', { bearer: `${header}.${forged}.${signature}`, headers: { 'x-trace-id': trace } });
    expect(response.status).toBe(401);
    expect(receivedWithTrace(trace)).toHaveLength(0);
    expect((await proxy(agent, 'GET', '/still-accepted')).status).toBe(200);
  });

  it('answers 401 for an expired token, also after it was accepted and cached', async () => {
    // Three seconds, not one: under CI's parallel load creating two agents has taken longer than a second.
    const shortLived = await startGateway({ UPSTREAM_URL: upstream.url, AGENT_TOKEN_TTL: '3s' });
    try {
      const owner = await createOrganization(shortLived, 'enterprise', 'Expiry org');
      const used = await createAgent(owner, {}, shortLived);
      const unused = await createAgent(owner, {}, shortLived);
      expect((await proxy(used, 'GET', '/fresh', { on: shortLived })).status).toBe(200);
      // exp has a resolution of one second: wait past the TTL and the next whole second.
      await new Promise((resolve) => setTimeout(resolve, 4200));
      for (const expired of [used, unused]) {
        const trace = traceId();
        const response = await proxy(expired, 'GET', '/stale', { on: shortLived, headers: { 'x-trace-id': trace } });
        expect(response.status).toBe(401);
        expect(response.body).toEqual({ error: 'unauthorized', message: expect.any(String) });
        expect(receivedWithTrace(trace)).toHaveLength(0);
      }
    } finally {
      await shortLived.close();
    }
  });

  it('answers 401 on the very next request after the agent is revoked', async () => {
    const revoked = await createAgent(org, { name: 'to-revoke' });
    expect((await proxy(revoked, 'GET', '/before')).status).toBe(200);
    expect((await call(gateway.url, 'DELETE', `/admin/agents/${revoked.id}`, { adminToken: org.adminToken })).status).toBe(200);
    const trace = traceId();
    const response = await proxy(revoked, 'GET', '/after', { headers: { 'x-trace-id': trace } });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ error: 'unauthorized', message: expect.any(String) });
    expect(receivedWithTrace(trace)).toHaveLength(0);
    expect((await proxy(agent, 'GET', '/others-unaffected')).status).toBe(200);
  });

  it('answers 401 when the agent is revoked while the body a policy reads is still arriving', async () => {
    const { org: bodyOrg, agent: slow } = await setup([{ name: 'big-payments', action: 'write:payments*', condition: 'args.amount > 100' }]);
    const trace = traceId();
    const { hostname, port } = new URL(gateway.url);
    const headers = { authorization: `Bearer ${slow.token}`, 'content-type': 'application/json', 'x-trace-id': trace };
    const request = http.request({ hostname, port, method: 'POST', path: '/proxy/payments', headers, agent: false });
    const answered = new Promise<number>((resolve, reject) => {
      request.on('response', (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.on('error', reject);
    });
    request.write('{"amount": ');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await call(gateway.url, 'DELETE', `/admin/agents/${slow.id}`, { adminToken: bodyOrg.adminToken })).status).toBe(200);
    request.end('5}');
    expect(await answered).toBe(401);
    expect(receivedWithTrace(trace)).toHaveLength(0);
  });
});

describe('denials', () => {
  it('answers 403 with exactly the body docs/proxy.md gives and never reaches the upstream', async () => {
    const { agent } = await setup([{ name: 'block-etc', action: 'read:*', condition: 'args.path starts_with "/etc"', reason: 'System files are off limits' }]);
    const trace = traceId();
    const response = await proxy(agent, 'GET', '/etc/passwd?x=1', { headers: { 'x-trace-id': trace } });
    expect(response.status).toBe(403);
    expect(response.body).toEqual({
      error: 'forbidden',
      message: expect.any(String),
      reason: 'System files are off limits',
      policy: 'block-etc',
      action: 'read:etc/passwd',
      trace_id: trace,
    });
    expectDecisionHeaders(response, 'deny', 'block-etc', agent, trace);
    expect(receivedWithTrace(trace)).toHaveLength(0);
  });

  it('answers 429 rate_limited past rate_limit(per_agent, 3, 1m), for that agent only', async () => {
    const { org, agent } = await setup([{ name: 'write-rate', action: 'write:*', condition: 'rate_limit(per_agent, 3, 1m)', reason: 'Too many writes' }]);
    for (let i = 0; i < 3; i++) expect((await proxy(agent, 'POST', '/orders', { body: { i } })).status).toBe(200);
    const limited = await proxy(agent, 'POST', '/orders', { body: { i: 4 } });
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: 'rate_limited', message: expect.any(String), retry_after: expect.any(Number), limit: '3/1m per_agent' });
    expect(limited.body.retry_after).toBeGreaterThanOrEqual(1);
    expect(limited.body.retry_after).toBeLessThanOrEqual(60);
    expect(limited.headers.get('retry-after')).toBe(String(limited.body.retry_after));
    expectDecisionHeaders(limited, 'deny', 'write-rate', agent);

    const other = await createAgent(org, { name: 'other' });
    expect((await proxy(other, 'POST', '/orders', { body: {} })).status).toBe(200);
  });

  it('reads JSON body fields and query parameters as args, and forwards an allowed body byte for byte', async () => {
    const { agent } = await setup([{ name: 'big-payments', action: 'write:payments*', condition: 'args.amount > 100', reason: 'Amount over 100' }]);
    const denied = await proxy(agent, 'POST', '/payments', { body: { amount: 500 } });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ policy: 'big-payments', reason: 'Amount over 100' });
    expect((await proxy(agent, 'POST', '/payments?amount=500')).status).toBe(403);

    const trace = traceId();
    const body = Buffer.from('{ "amount" : 50,\n  "note": "ünïcödé ✓", "nested": {"b": 1, "a": [1, 2.50]} }\n', 'utf8');
    const allowed = await rawRequest(gateway.url, '/proxy/payments/new', {
      method: 'POST',
      headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json', 'x-trace-id': trace },
      body,
    });
    expect(allowed.status).toBe(200);
    const [received] = receivedWithTrace(trace);
    expect(received.body.equals(body)).toBe(true);
    expect(received.headers['content-length']).toBe(String(body.length));
    expect(received.headers['content-type']).toBe('application/json');
  });

  it('reads the JSON body whatever the case of its media type: Application/JSON is JSON to any upstream', async () => {
    const { agent } = await setup([{ name: 'big-payments', action: 'write:payments*', condition: 'args.amount > 100', reason: 'Amount over 100' }]);
    for (const type of ['Application/JSON', 'APPLICATION/JSON; charset=utf-8', 'application/Vnd.Api+JSON']) {
      const trace = traceId();
      const response = await proxy(agent, 'POST', '/payments', { headers: { 'content-type': type, 'x-trace-id': trace }, body: '{"amount": 500}' });
      expect({ type, status: response.status }).toEqual({ type, status: 403 });
      expect(receivedWithTrace(trace)).toHaveLength(0);
    }
  });

  it('answers 400 invalid_json when a policy must read a body that is not JSON', async () => {
    const { agent } = await setup([{ name: 'big-payments', action: 'write:payments*', condition: 'args.amount > 100' }]);
    const trace = traceId();
    const response = await proxy(agent, 'POST', '/payments', { headers: { 'content-type': 'application/json', 'x-trace-id': trace }, body: '{"amount": 5' });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: 'invalid_json', message: expect.any(String) });
    expect(receivedWithTrace(trace)).toHaveLength(0);
  });

  it('gives context.<name> from X-Service-Context-<Name> headers', async () => {
    const { agent } = await setup([
      { name: 'prod-deletes', action: 'delete:*', condition: 'context.environment == "production"' },
      { name: 'pii-reads', action: 'read:*', condition: 'context.data_class == "pii"' },
    ]);
    const cases: Array<[method: string, headers: Record<string, string>, status: number]> = [
      ['DELETE', { 'x-service-context-environment': 'production' }, 403],
      ['DELETE', { 'x-service-context-environment': 'staging' }, 200],
      ['DELETE', {}, 200],
      ['GET', { 'X-Service-Context-Data-Class': 'pii' }, 403],
      ['GET', { 'X-Service-Context-Data-Class': 'public' }, 200],
    ];
    for (const [method, headers, status] of cases) expect([method, headers, (await proxy(agent, method, '/records/1', { headers })).status]).toEqual([method, headers, status]);
  });
});

describe('path normalisation', () => {
  let based: TestGateway;
  let agent: Agent;

  beforeAll(async () => {
    based = await startGateway({ UPSTREAM_URL: `${upstream.url}/base` });
    ({ agent } = await setup([{ name: 'no-etc', action: 'read:etc*', condition: 'true' }], 'enterprise', based));
  });
  afterAll(() => based.close());

  // [raw path, expected status, upstream path when forwarded]
  const table: Array<[string, number, string | null]> = [
    ['/proxy/a/../../etc/passwd', 400, null],
    ['/proxy/%2e%2e/x', 400, null],
    ['/proxy/a/%2E%2E/%2e%2e/x', 400, null],
    ['/proxy/a%2f..%2fb', 400, null],
    ['/proxy/..%5c..%5cetc', 400, null],
    ['/proxy', 200, '/base/'],
    ['/proxy?x=1', 200, '/base/?x=1'],
    ['/proxy/a/b/../c', 200, '/base/a/c'],
    ['/proxy/a/./b/%2e/c', 200, '/base/a/b/c'],
    ['/proxy/a/%2e%2e/b?q=../x', 200, '/base/b?q=../x'],
    ['/proxy/a/../etc/passwd', 403, null],
    ['/proxy/x/%2E%2E/etc/shadow', 403, null],
  ];

  it.each(table)('%s → %i, never outside the upstream base', async (path, status, forwardedTo) => {
    const trace = traceId();
    const response = await rawRequest(based.url, path, { headers: { authorization: `Bearer ${agent.token}`, 'x-trace-id': trace } });
    expect(response.status).toBe(status);
    if (status === 400) expect(JSON.parse(response.body.toString())).toEqual({ error: 'invalid_request', message: expect.any(String) });
    if (status === 403) expect(JSON.parse(response.body.toString())).toMatchObject({ policy: 'no-etc', action: expect.stringMatching(/^read:etc\//) });
    expect(receivedWithTrace(trace).map((request) => request.url)).toEqual(forwardedTo === null ? [] : [forwardedTo]);
  });

  it('sent the upstream nothing outside its base path', () => {
    const seen = upstream.requests.filter((request) => String(request.headers['x-forwarded-host']) === new URL(based.url).host);
    expect(seen.length).toBeGreaterThan(0);
    for (const request of seen) {
      expect(request.url.startsWith('/base/')).toBe(true);
      expect(decodeURIComponent(request.url.split('?')[0]).split('/')).not.toContain('..');
    }
  });
});

describe('upstream failures', () => {
  it('stops the upstream call and records 499 at once when the client goes away before the answer', async () => {
    const { org, agent } = await setup();
    const trace = traceId();
    const { hostname, port } = new URL(gateway.url);
    const started = Date.now();
    const request = http.request({ hostname, port, path: '/proxy/slow/5000', headers: { authorization: `Bearer ${agent.token}`, 'x-trace-id': trace }, agent: false });
    request.on('error', () => undefined);
    request.end();
    for (let waited = 0; receivedWithTrace(trace).length === 0 && waited < 5000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    request.destroy();
    const [entry] = await auditEntries(org, `source=proxy&agentId=${agent.id}`, 1);
    expect(entry).toEqual(expect.objectContaining({ traceId: trace, decision: 'allow', status: 499, upstreamStatus: null }));
    // Recorded when the client left, not when the upstream would have answered.
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('answers 502 bad_gateway when the upstream is unreachable', async () => {
    const gone = await startUpstream();
    await gone.close();
    const instance = await startGateway({ UPSTREAM_URL: gone.url });
    try {
      const { org, agent } = await setup([], 'enterprise', instance);
      const response = await proxy(agent, 'GET', '/anything', { on: instance });
      expect(response.status).toBe(502);
      expect(response.body).toEqual({ error: 'bad_gateway', message: expect.any(String) });
      expectDecisionHeaders(response, 'allow', 'default', agent);
      expect(await auditEntries(org, 'source=proxy', 1, instance)).toEqual([expect.objectContaining({ decision: 'allow', status: 502, upstreamStatus: null })]);
    } finally {
      await instance.close();
    }
  });

  it('answers 502 naming an upstream answer it cannot relay (headers over 16 KiB), not an unreachable upstream', async () => {
    const { org, agent } = await setup();
    const response = await proxy(agent, 'GET', '/big-header/20000');
    expect(response.status).toBe(502);
    expect(response.body).toEqual({ error: 'bad_gateway', message: expect.stringContaining('invalid response') });
    expect(response.body.message).not.toContain('could not be reached');
    expectDecisionHeaders(response, 'allow', 'default', agent);
    expect(await auditEntries(org, 'source=proxy', 1)).toEqual([expect.objectContaining({ decision: 'allow', status: 502, upstreamStatus: null })]);
  });

  it('answers 504 when the upstream is slower than UPSTREAM_TIMEOUT_MS', async () => {
    const instance = await startGateway({ UPSTREAM_URL: upstream.url, UPSTREAM_TIMEOUT_MS: '200' });
    try {
      const { org, agent } = await setup([], 'enterprise', instance);
      const started = Date.now();
      const response = await proxy(agent, 'GET', '/slow/5000', { on: instance });
      expect(response.status).toBe(504);
      expect(response.body).toEqual({ error: 'gateway_timeout', message: expect.any(String) });
      // undici's timers tick about once a second, so a 200 ms timeout fires within ~1.2 s.
      expect(Date.now() - started).toBeLessThan(2500);
      expect(await auditEntries(org, 'source=proxy', 1, instance)).toEqual([expect.objectContaining({ status: 504, upstreamStatus: null })]);
    } finally {
      await instance.close();
    }
  });

  it('answers 503 service_unavailable, as the PDP does, when the database is down (not 500)', async () => {
    const database = await ownDatabase();
    try {
      const instance = await startGateway({ DATABASE_URL: database.url, UPSTREAM_URL: upstream.url });
      try {
        // An agent the gateway has not seen yet: its record has to come from the database.
        const { agent } = await setup([], 'enterprise', instance);
        await database.takeDown();
        const response = await proxy(agent, 'GET', '/anything', { on: instance });
        expect(response.body).toMatchObject({ error: 'service_unavailable' });
        expect(response.status).toBe(503);
      } finally {
        await instance.close();
        // The cluster-event listener's reconnect timer fires up to 1 s after close (service.e2e-spec.ts).
        await new Promise((resolve) => setTimeout(resolve, 1100));
      }
    } finally {
      await database.dispose();
    }
  });

  it('answers 502 no_upstream when UPSTREAM_URL is not set', async () => {
    const instance = await startGateway();
    try {
      const { agent } = await setup([], 'enterprise', instance);
      const response = await proxy(agent, 'GET', '/anything', { on: instance });
      expect(response.status).toBe(502);
      expect(response.body).toEqual({ error: 'no_upstream', message: expect.any(String) });
    } finally {
      await instance.close();
    }
  });
});

describe('MODE=audit', () => {
  it('forwards a request a policy denies, says deny, and records it as not enforced', async () => {
    const instance = await startGateway({ UPSTREAM_URL: upstream.url, MODE: 'audit' });
    try {
      const { org, agent } = await setup([{ name: 'no-writes', action: 'write:*', condition: 'true', reason: 'Read only' }], 'enterprise', instance);
      const trace = traceId();
      const response = await proxy(agent, 'POST', '/status/201', { on: instance, headers: { 'x-trace-id': trace }, body: { a: 1 } });
      expect(response.status).toBe(201);
      expect(response.body).toEqual({ upstreamStatus: 201, path: '/status/201' });
      expectDecisionHeaders(response, 'deny', 'no-writes', agent, trace);
      expect(receivedWithTrace(trace)).toHaveLength(1);
      const [entry] = await auditEntries(org, `source=proxy&agentId=${agent.id}`, 1, instance);
      expect(entry).toMatchObject({ traceId: trace, decision: 'deny', enforced: false, policyName: 'no-writes', status: 201, upstreamStatus: 201 });
    } finally {
      await instance.close();
    }
  });
});

describe('monthly policy-check quota', () => {
  async function setUsage(orgId: string, checks: number): Promise<void> {
    await gateway.app.get(DataSource).query(
      `INSERT INTO usage_counters (org_id, period, policy_checks) VALUES ($1, to_char(now() at time zone 'utc', 'YYYY-MM'), $2)
       ON CONFLICT (org_id, period) DO UPDATE SET policy_checks = EXCLUDED.policy_checks`,
      [orgId, checks],
    );
  }

  it('answers 429 quota_exceeded once a free organization has used its 1000 checks', async () => {
    const { org, agent } = await setup([], 'free');
    await setUsage(org.id, 1000);
    const trace = traceId();
    const response = await proxy(agent, 'GET', '/anything', { headers: { 'x-trace-id': trace } });
    expect(response.status).toBe(429);
    expect(response.body).toEqual({ error: 'quota_exceeded', message: expect.any(String) });
    expect(receivedWithTrace(trace)).toHaveLength(0);
  });

  it('lets a free organization under its quota through', async () => {
    const { org, agent } = await setup([], 'free');
    await setUsage(org.id, 999);
    expect((await proxy(agent, 'GET', '/anything')).status).toBe(200);
    expect((await proxy(agent, 'GET', '/anything')).status).toBe(429);
  });

  it('never limits an enterprise organization', async () => {
    const { org, agent } = await setup([], 'enterprise');
    await setUsage(org.id, 10_000_000);
    expect((await proxy(agent, 'GET', '/anything')).status).toBe(200);
  });
});
