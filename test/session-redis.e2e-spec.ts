import Redis from 'ioredis';
import { call } from './support/http-client';
import { auditEntries, createAgent, proxy, TestAgent } from './support/org-fixtures';
import { freePort } from './support/processes';
import { TcpRelay } from './support/tcp-relay';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * Sessions shared by two gateway instances on one database and one Redis (docs/policies.md
 * "Bounds"), as behind a load balancer: a label added through one instance is read by a decision
 * at the other, so an agent cannot shed it by landing elsewhere; organizations never meet.
 */

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const EXFILTRATION = `name: exfiltration
rules:
  - name: reads-customers
    condition: action starts_with "read:customers/"
    action: label
    labels: [private_data]
    reason: Customer records were read
  - name: fetches-web
    condition: action starts_with "read:web/"
    action: label
    labels: [untrusted_content]
    reason: An untrusted web page was fetched
  - name: downloads
    condition: action starts_with "read:downloads/"
    action: label
    labels: [downloaded]
    scope: agent
    ttl: 1h
    reason: A file was downloaded
  - name: no-way-out
    condition: action starts_with "write:mail/" and session.labels.has("private_data") and session.labels.has("untrusted_content")
    action: deny
    reason: Private data and untrusted content in one session; nothing leaves by mail
  - name: no-upload-after-download
    condition: action starts_with "write:uploads/" and agent.labels.has("downloaded")
    action: deny
    reason: Nothing is uploaded within the hour after a download
  - name: one-report-a-session
    condition: action starts_with "write:reports/" and session.called("write:reports/*")
    action: deny
    reason: One report a session
`;

let upstream: TestUpstream;
let a: TestGateway;
let b: TestGateway;
let redis: Redis;

const session = (id: string) => ({ 'x-service-session': id });

async function putPolicy(org: TestOrganization): Promise<void> {
  const response = await call(a.url, 'PUT', '/admin/policies/exfiltration', { adminToken: org.adminToken, body: EXFILTRATION, headers: { 'content-type': 'application/yaml' } });
  expect([200, 201]).toContain(response.status);
}

/** Waits until gateway B decides the organization's requests on the policy put through A (a probe agent's harmless call names it). */
async function untilBHasPolicy(org: TestOrganization): Promise<void> {
  const probe = await createAgent(a, org, { name: 'probe' });
  const deadline = Date.now() + 10_000;
  for (;;) {
    const response = await proxy(b, probe.token, 'GET', '/health-probe');
    if (response.headers.get('x-service-policy') === 'exfiltration' || Date.now() > deadline) {
      expect(response.headers.get('x-service-policy')).toBe('exfiltration');
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  upstream = await startUpstream();
  a = await startGateway({ UPSTREAM_URL: upstream.url, REDIS_URL });
  b = await startGateway({ UPSTREAM_URL: upstream.url, REDIS_URL });
  redis = new Redis(REDIS_URL);
});
afterAll(async () => {
  redis?.disconnect();
  await a?.close();
  await b?.close();
  await upstream?.close();
});

describe('one organization behind two instances', () => {
  let org: TestOrganization;
  let agent: TestAgent;

  beforeAll(async () => {
    org = await createOrganization(a, 'enterprise', 'Two-instance sessions org');
    await putPolicy(org);
    await untilBHasPolicy(org);
    agent = await createAgent(a, org, { name: 'roaming-mailer' });
  });

  it('reads at B the labels a session took at A: the third step is denied on the other instance', async () => {
    expect((await proxy(a, agent.token, 'GET', '/customers/42', session('s-roam'))).status).toBe(200);
    expect((await proxy(a, agent.token, 'GET', '/web/page', session('s-roam'))).status).toBe(200);
    const third = await proxy(b, agent.token, 'POST', '/mail/send', session('s-roam'));
    expect(third.status).toBe(403);
    expect(third.body).toMatchObject({ error: 'forbidden', policy: 'exfiltration', reason: 'Private data and untrusted content in one session; nothing leaves by mail' });
    const denied = (await auditEntries(b, org, `agentId=${agent.id}&decision=deny`, 1))[0];
    expect(denied.details).toMatchObject({ session: { id: 's-roam', labels: ['private_data', 'untrusted_content'], agentLabels: [] } });
  });

  it('keeps the labels of each step wherever it lands: one step at A, one at B, the mail at A', async () => {
    expect((await proxy(a, agent.token, 'GET', '/customers/7', session('s-split'))).status).toBe(200);
    expect((await proxy(b, agent.token, 'GET', '/web/page', session('s-split'))).status).toBe(200);
    expect((await proxy(a, agent.token, 'POST', '/mail/send', session('s-split'))).status).toBe(403);
  });

  it('reads at A an agent label added at B, in every session of the agent', async () => {
    const other = await createAgent(a, org, { name: 'downloader' });
    expect((await proxy(b, other.token, 'GET', '/downloads/file', session('d-1'))).status).toBe(200);
    expect((await proxy(a, other.token, 'POST', '/uploads/file', session('d-2'))).status).toBe(403);
    expect((await proxy(a, other.token, 'POST', '/uploads/file')).status).toBe(403);
  });

  it('counts at B a call let through at A in session.called', async () => {
    expect((await proxy(a, agent.token, 'POST', '/reports/q1', session('r-1'))).status).toBe(200);
    expect((await proxy(b, agent.token, 'POST', '/reports/q2', session('r-1'))).status).toBe(403);
    expect((await proxy(b, agent.token, 'POST', '/reports/q2', session('r-2'))).status).toBe(200);
  });

  it('clears labels through A for the decisions at B', async () => {
    const cleared = await call<{ cleared: boolean }>(a.url, 'POST', '/admin/sessions/clear-labels', { adminToken: org.adminToken, body: { agentId: agent.id, scope: 'session', sessionId: 's-roam' } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.cleared).toBe(true);
    expect((await proxy(b, agent.token, 'POST', '/mail/send', session('s-roam'))).status).toBe(200);
  });

  it('keeps every key of the organization sessions with a ttl, and at most 64 sessions an agent', async () => {
    const flooder = await createAgent(a, org, { name: 'flooder' });
    expect((await proxy(a, flooder.token, 'GET', '/customers/1', session('f-0'))).status).toBe(200);
    expect((await proxy(a, flooder.token, 'GET', '/web/page', session('f-0'))).status).toBe(200);
    for (let i = 1; i <= 64; i++) expect((await proxy(i % 2 === 0 ? a : b, flooder.token, 'GET', '/weather/today', session(`f-${i}`))).status).toBe(200);
    // Session f-0 was the agent's least recently used when its 65th began: it ended, with its labels.
    expect((await proxy(b, flooder.token, 'POST', '/mail/send', session('f-0'))).status).toBe(200);
    const keys = await redis.keys(`agentgov:session:{${org.id}}:*`);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) {
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(3_600_000);
    }
    expect(await redis.zcard(`agentgov:session:{${org.id}}:a:${flooder.id}`)).toBe(64);
  });
});

describe('two organizations behind the same two instances', () => {
  it('never meet: the same session id in two organizations keeps two sessions', async () => {
    const first = await createOrganization(a, 'enterprise', 'Sessions org one');
    const second = await createOrganization(b, 'enterprise', 'Sessions org two');
    await putPolicy(first);
    await putPolicy(second);
    await untilBHasPolicy(first);
    await untilBHasPolicy(second);
    const one = await createAgent(a, first, { name: 'same-name' });
    const two = await createAgent(a, second, { name: 'same-name' });
    expect((await proxy(a, two.token, 'GET', '/customers/1', session('shared'))).status).toBe(200);
    expect((await proxy(b, two.token, 'GET', '/web/page', session('shared'))).status).toBe(200);
    expect((await proxy(b, two.token, 'GET', '/downloads/file', session('shared'))).status).toBe(200);
    // The first organization's agent, naming the same session, carries none of it.
    expect((await proxy(b, one.token, 'POST', '/mail/send', session('shared'))).status).toBe(200);
    expect((await proxy(a, one.token, 'POST', '/uploads/file', session('shared'))).status).toBe(200);
    expect((await proxy(a, two.token, 'POST', '/mail/send', session('shared'))).status).toBe(403);
    expect((await proxy(b, two.token, 'POST', '/uploads/file', session('shared'))).status).toBe(403);
    const timeline = await call<{ labels: string[]; agentLabels: string[] }>(b.url, 'GET', `/admin/sessions/timeline?agentId=${one.id}&sessionId=shared`, { adminToken: first.adminToken });
    expect(timeline.status).toBe(200);
    expect(timeline.body).toMatchObject({ labels: [], agentLabels: [] });
    const otherTimeline = await call<{ labels: string[]; agentLabels: string[] }>(a.url, 'GET', `/admin/sessions/timeline?agentId=${two.id}&sessionId=shared`, { adminToken: second.adminToken });
    expect(otherTimeline.body).toMatchObject({ labels: ['private_data', 'untrusted_content'], agentLabels: ['downloaded'] });
  });
});

describe('an instance whose Redis does not answer', () => {
  let relay: TcpRelay;
  let c: TestGateway;
  afterAll(async () => {
    relay?.release();
    await c?.close();
    await relay?.close();
  });

  it('refuses a session-reading decision with 503 naming REDIS_URL, audited as a denial, and decides again once Redis answers', async () => {
    relay = await TcpRelay.listen(await freePort(), Number(new URL(REDIS_URL).port || 6379));
    c = await startGateway({ UPSTREAM_URL: upstream.url, REDIS_URL: `redis://127.0.0.1:${relay.port}` });
    const org = await createOrganization(c, 'enterprise', 'Sessions without Redis org');
    const put = await call(c.url, 'PUT', '/admin/policies/exfiltration', { adminToken: org.adminToken, body: EXFILTRATION, headers: { 'content-type': 'application/yaml' } });
    expect(put.status).toBe(201);
    const agent = await createAgent(c, org, { name: 'cut-off' });
    expect((await proxy(c, agent.token, 'GET', '/customers/1', session('cut'))).status).toBe(200);
    relay.hold();
    try {
      const refused = await call(c.url, 'GET', '/proxy/web/page', { bearer: agent.token, headers: session('cut'), timeoutMs: 8000 });
      expect(refused.status).toBe(503);
      expect(refused.body).toMatchObject({ error: 'service_unavailable', message: expect.stringContaining('REDIS_URL') });
    } finally {
      relay.release();
    }
    const entry = (await auditEntries(c, org, `agentId=${agent.id}&decision=deny`, 1))[0];
    expect(entry).toMatchObject({ action: 'read:web/page', decision: 'deny', status: 503, policyName: null, reason: expect.stringContaining('REDIS_URL') });
    // The label taken before the outage is still there.
    expect((await proxy(c, agent.token, 'GET', '/web/page', session('cut'))).status).toBe(200);
    expect((await proxy(c, agent.token, 'POST', '/mail/send', session('cut'))).status).toBe(403);
  });
});
