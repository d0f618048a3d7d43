import { execFile, spawn } from 'node:child_process';
import http from 'node:http';
import net, { AddressInfo } from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { DataSource } from 'typeorm';
import { AppConfig } from '../src/core/config/app-config';
import { createGateway } from '../src/gateway/app/gateway';
import { AlertReceiver, checkSignature, ReceivedRequest, SmtpReceiver, startAlertReceiver, startEndlessChunkedReceiver, startSmtpReceiver } from './support/alert-receivers';
import { call, TestResponse } from './support/http-client';
import { createOrganization, startGateway, testEnv, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/** Outgoing alerts (docs/alerts.md, its triggers and severity), with real receivers. */

const SECRET = 'whsec-e2e-alerts-0123456789';
const SMTP_USER = 'alerts@mail.test';
const SMTP_PASS = 'smtp-e2e-password';
const CLI = path.resolve(__dirname, '../dist/src/cli/main.js');

interface Agent {
  id: string;
  name: string;
  token: string;
}

interface Rule {
  condition: string;
  action: 'allow' | 'deny' | 'alert';
  reason: string;
}

interface WebhookPayload {
  event: string;
  version: string;
  id: string;
  timestamp: string;
  severity: string;
  trigger: string;
  title: string;
  message: string;
  entry: Record<string, string>;
  instance: string;
  environment: string;
}

let upstream: TestUpstream;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(() => upstream.close());

/** A unique environment name, so the Redis rate counters of runs and gateways never meet. */
function uniqueEnvironment(label: string): string {
  return `e2e-${label}-${process.pid}-${Date.now()}`;
}

function policyYaml(name: string, rules: Rule[], action?: string): string {
  return [
    `name: ${name}`,
    ...(action === undefined ? [] : [`match: { action: ${JSON.stringify(action)} }`]),
    'rules:',
    ...rules.flatMap((rule, index) => [
      `  - name: ${name}-${index}`,
      `    condition: ${JSON.stringify(rule.condition)}`,
      `    action: ${rule.action}`,
      `    reason: ${JSON.stringify(rule.reason)}`,
    ]),
    '',
  ].join('\n');
}

/** An organization with these policies and one agent of `tier`. */
async function setup(gateway: TestGateway, policies: Array<{ name: string; rules: Rule[]; action?: string }>, tier = 'verified'): Promise<{ org: TestOrganization; agent: Agent }> {
  const org = await createOrganization(gateway, 'enterprise', 'Alerts org');
  for (const policy of policies) {
    const response = await call(gateway.url, 'PUT', `/admin/policies/${policy.name}`, {
      adminToken: org.adminToken,
      body: policyYaml(policy.name, policy.rules, policy.action),
      headers: { 'content-type': 'application/yaml' },
    });
    expect([200, 201]).toContain(response.status);
  }
  const created = await call<Agent>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: `alerts-agent-${tier}`, trustTier: tier } });
  expect(created.status).toBe(201);
  return { org, agent: created.body };
}

function proxy(gateway: TestGateway, agent: Agent, method: string, requestPath: string, headers: Record<string, string> = {}): Promise<TestResponse> {
  return call(gateway.url, method, `/proxy${requestPath}`, { bearer: agent.token, headers });
}

/** Sets this month's policy checks of `orgId`, as if its agents had made them. */
async function useUpQuota(gateway: TestGateway, orgId: string, checks: number): Promise<void> {
  await gateway.app.get(DataSource).query(
    `INSERT INTO usage_counters (org_id, period, policy_checks) VALUES ($1, to_char(now() at time zone 'utc', 'YYYY-MM'), $2)
     ON CONFLICT (org_id, period) DO UPDATE SET policy_checks = EXCLUDED.policy_checks`,
    [orgId, checks],
  );
}

/** The webhook alerts about one agent. */
function about(agent: Agent) {
  return (request: ReceivedRequest) => (request.json as unknown as WebhookPayload).entry?.agentId === agent.id;
}

function payloads(requests: ReceivedRequest[]): WebhookPayload[] {
  return requests.map((request) => request.json as unknown as WebhookPayload);
}

const DENY_SECRETS = { name: 'no-secrets', action: 'read:secret*', rules: [{ condition: 'true', action: 'deny' as const, reason: 'Secrets are off limits' }] };

/**
 * The ways a denial reaches the decision core. Each entry point denies `agent` of `org` once and
 * returns the trace id its audit entry carries; `method` and `path` are what that entry shows.
 */
const DENIAL_ENTRY_POINTS: Array<{ source: string; deny: (gateway: TestGateway, org: TestOrganization, agent: Agent) => Promise<string>; method: string; path: string; action: string }> = [
  {
    source: 'proxy',
    deny: async (gateway, _org, agent) => {
      const traceId = `alerts-trace-${Date.now()}`;
      const response = await proxy(gateway, agent, 'GET', '/secret/plans.txt', { 'x-trace-id': traceId });
      expect(response.status).toBe(403);
      return traceId;
    },
    method: 'GET',
    path: '/secret/plans.txt',
    action: 'read:secret/plans.txt',
  },
  {
    source: '/v1/check',
    deny: async (gateway, org, agent) => {
      const key = await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'alerts test' } });
      expect(key.status).toBe(201);
      const response = await call<{ decision: string; traceId: string }>(gateway.url, 'POST', '/v1/check', {
        body: { agentId: agent.id, plugin: 'FilePlugin', function: 'ReadFile', action: 'read:secret/plans.txt' },
        headers: { 'x-api-key': key.body.key },
      });
      expect(response.body.decision).toBe('deny');
      return response.body.traceId;
    },
    method: '',
    path: '',
    action: 'read:secret/plans.txt',
  },
];

describe('every provider, ALERT_ON=all', () => {
  let gateway: TestGateway;
  let webhook: AlertReceiver;
  let chat: AlertReceiver;
  let emailApi: AlertReceiver;
  const environment = uniqueEnvironment('all');

  beforeAll(async () => {
    [webhook, chat, emailApi] = await Promise.all([startAlertReceiver(), startAlertReceiver(), startAlertReceiver()]);
    gateway = await startGateway({
      UPSTREAM_URL: upstream.url,
      UPSTREAM_TIMEOUT_MS: '1000',
      ALERT_ON: 'all',
      ALERT_WEBHOOK_URL: `${webhook.url}/hooks/governance`,
      ALERT_WEBHOOK_SECRET: SECRET,
      ALERT_CHAT_WEBHOOK: `${chat.url}/services/T000/B000/XXXX`,
      ALERT_EMAIL_ENABLED: 'true',
      ALERT_EMAIL_FROM: 'gateway@alerts.test',
      ALERT_EMAIL_TO: 'oncall@acme.test,security@acme.test',
      ALERT_EMAIL_API_KEY: 're_e2e_key_0123',
      ALERT_EMAIL_API_URL: emailApi.url,
      ALERT_RATE_LIMIT: '10000',
      ALERT_INSTANCE_NAME: 'gw-e2e-1',
      ALERT_ENVIRONMENT: environment,
    });
  });
  afterAll(async () => {
    await gateway.close();
    await Promise.all([webhook.close(), chat.close(), emailApi.close()]);
  });

  it.each(DENIAL_ENTRY_POINTS)('a $source denial: the signed SPEC payload to the webhook, a chat message and an email', async ({ deny, method, path: requestPath, action }) => {
    const { org, agent } = await setup(gateway, [DENY_SECRETS]);
    const traceId = await deny(gateway, org, agent);

    const [received] = await webhook.waitFor(1, about(agent));
    expect(received).toBeDefined();
    expect(received.path).toBe('/hooks/governance');
    expect(received.headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'Service/1.0',
      'x-service-event': 'alert',
      'x-service-trigger': 'deny',
    });
    expect(checkSignature(SECRET, received)).toEqual({ bodySignature: true, timestampedSignature: true, fresh: true });
    expect(checkSignature('another-secret', received)).toMatchObject({ bodySignature: false, timestampedSignature: false });
    const payload = received.json as unknown as WebhookPayload;
    expect(Object.keys(payload).sort()).toEqual(['entry', 'environment', 'event', 'id', 'instance', 'message', 'severity', 'timestamp', 'title', 'trigger', 'version']);
    expect(payload).toMatchObject({
      event: 'service.alert',
      version: '1.0',
      id: expect.stringMatching(/^alert_[0-9a-f]+$/),
      severity: 'warning',
      trigger: 'deny',
      title: 'Request denied by policy no-secrets',
      instance: 'gw-e2e-1',
      environment,
    });
    expect(new Date(payload.timestamp).toISOString()).toBe(payload.timestamp);
    expect(payload.message).toContain('Secrets are off limits');
    expect(payload.entry).toEqual({
      traceId,
      agentId: agent.id,
      agentName: agent.name,
      trustTier: 'verified',
      action,
      method,
      path: requestPath,
      decision: 'deny',
      policyName: 'no-secrets',
      reason: 'Secrets are off limits',
    });

    const [message] = await chat.waitFor(1, (request) => request.raw.includes(agent.id) || request.raw.includes(traceId));
    expect(message.path).toBe('/services/T000/B000/XXXX');
    expect(message.headers['x-service-signature']).toBeUndefined();
    const chatText = message.raw;
    const request = method === '' ? [] : [`${method} ${requestPath}`];
    for (const item of ['Request denied by policy no-secrets', 'Secrets are off limits', 'no-secrets', `${agent.name} (verified)`, 'deny', action, ...request, traceId, 'gw-e2e-1', `(${environment})`]) {
      expect(chatText).toContain(item);
    }
    expect(message.json).toMatchObject({ text: expect.stringContaining('WARNING') });

    const [mail] = await emailApi.waitFor(1, (request) => request.raw.includes(traceId));
    expect(mail.path).toBe('/emails');
    expect(mail.headers.authorization).toBe('Bearer re_e2e_key_0123');
    // A retry of the same alert is the same email to the API, which sends it once.
    expect(mail.headers['idempotency-key']).toBe(`alert-email/${payload.id}`);
    expect(mail.json).toMatchObject({ from: 'gateway@alerts.test', to: ['oncall@acme.test', 'security@acme.test'], subject: '[WARNING] Request denied by policy no-secrets' });
    expect(mail.json.text).toEqual(expect.stringContaining(`Trace ID:    ${traceId}`));
    expect(mail.json.text).toEqual(expect.stringContaining(payload.id));
  });

  it('the chat message escapes Slack markup from policy reasons (no channel ping, no disguised link)', async () => {
    const reason = '<!channel> see <https://evil.example|the runbook> & act';
    const { agent } = await setup(gateway, [{ ...DENY_SECRETS, name: 'markup', rules: [{ condition: 'true', action: 'deny', reason }] }]);
    const traceId = `alerts-markup-${Date.now()}`;
    expect((await proxy(gateway, agent, 'GET', '/secret/x', { 'x-trace-id': traceId })).status).toBe(403);
    const [message] = await chat.waitFor(1, (request) => request.raw.includes(traceId));
    expect(message).toBeDefined();
    const texts = JSON.stringify(message.json);
    expect(texts).toContain('&lt;!channel&gt; see &lt;https://evil.example|the runbook&gt; &amp; act');
    expect(texts).not.toMatch(/<!channel>|<https:/);
  });

  // The characters the forger sends, bar the line feed (which the email has between its own lines).
  // eslint-disable-next-line no-control-regex -- control characters are what is looked for
  const FORGING = /[\r\u2028\u0007]/;

  it('a caller cannot add lines to the chat message or the email: line breaks and control characters in what it sends are shown escaped', async () => {
    const { org, agent } = await setup(gateway, [DENY_SECRETS]);
    const key = await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'forger' } });
    // The action is the caller's (an adapter's, on behalf of its agent): it tries to forge fields below its own.
    const action = 'read:secret/x\r\nSeverity:    info\nDecision:    allow\u2028\u0007';
    const checked = await call<{ decision: string; traceId: string }>(gateway.url, 'POST', '/v1/check', {
      body: { agentId: agent.id, plugin: 'FilePlugin', function: 'ReadFile', action },
      headers: { 'x-api-key': key.body.key },
    });
    expect(checked.body.decision).toBe('deny');
    const traceId = checked.body.traceId;

    const [mail] = await emailApi.waitFor(1, (request) => request.raw.includes(traceId));
    const lines = String(mail.json.text).split('\n');
    expect(lines.filter((line) => line.startsWith('Severity:'))).toEqual(['Severity:    warning']);
    expect(lines.filter((line) => line.startsWith('Decision:'))).toEqual(['Decision:    deny']);
    expect(lines).toContain('Action:      read:secret/x\\r\\nSeverity:    info\\nDecision:    allow\\u2028\\u0007');
    expect(String(mail.json.text)).not.toMatch(FORGING);

    const [message] = await chat.waitFor(1, (request) => request.raw.includes(traceId));
    const blocks = (message.json.attachments as Array<{ blocks: Array<{ text?: { text: string }; fields?: Array<{ text: string }> }> }>)[0].blocks;
    // Each field is its label, one line break, its value; the header and summary are one line.
    for (const field of blocks[2].fields!) expect(field.text.split('\n')).toHaveLength(2);
    expect([blocks[0].text!.text, blocks[1].text!.text, String(message.json.text)].filter((text) => FORGING.test(text) || text.includes('\n'))).toEqual([]);

    // The webhook carries the action exactly as given: its receiver gets structured JSON.
    const [alert] = await webhook.waitFor(1, (request) => request.raw.includes(traceId));
    expect((alert.json as unknown as WebhookPayload).entry.action).toBe(action);
  });

  describe('severity (docs/alerts.md)', () => {
    const RATE_LIMITED = { name: 'two-per-minute', rules: [{ condition: 'rate_limit(per_agent, 2, 1m)', action: 'deny' as const, reason: 'Two requests a minute' }] };
    const DENY_DELETES = { name: 'no-deletes', action: 'delete:*', rules: [{ condition: 'true', action: 'deny' as const, reason: 'Nothing is deleted' }] };

    it('a denial of a verified agent is a warning; of a privileged agent, critical', async () => {
      const verified = await setup(gateway, [DENY_SECRETS], 'verified');
      const privileged = await setup(gateway, [DENY_SECRETS], 'privileged');
      expect((await proxy(gateway, verified.agent, 'GET', '/secret/a')).status).toBe(403);
      expect((await proxy(gateway, privileged.agent, 'GET', '/secret/a')).status).toBe(403);
      expect(payloads(await webhook.waitFor(1, about(verified.agent)))).toMatchObject([{ trigger: 'deny', severity: 'warning' }]);
      expect(payloads(await webhook.waitFor(1, about(privileged.agent)))).toMatchObject([{ trigger: 'deny', severity: 'critical', entry: { trustTier: 'privileged' } }]);
    });

    it('a denial of an action on an admin path is critical, a similar path is not', async () => {
      const { agent } = await setup(gateway, [DENY_DELETES]);
      expect((await proxy(gateway, agent, 'DELETE', '/api/admin/users/7')).status).toBe(403);
      expect((await proxy(gateway, agent, 'DELETE', '/api/administrators-guide')).status).toBe(403);
      const alerts = payloads(await webhook.waitFor(2, about(agent)));
      expect(alerts.map((alert) => [alert.entry.path, alert.severity]).sort()).toEqual([
        ['/api/admin/users/7', 'critical'],
        ['/api/administrators-guide', 'warning'],
      ]);
    });

    it('a PDP denial of a resource on an admin path is critical, as the proxy’s is', async () => {
      const { org, agent } = await setup(gateway, [DENY_SECRETS]);
      const key = (await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'severity' } })).body.key;
      const ask = (resource: string) => call<Record<string, unknown>>(gateway.url, 'POST', '/v1/check', { body: { agentId: agent.id, plugin: 'FilePlugin', function: 'ReadFile', action: 'read:secret/keys', resource }, headers: { 'x-api-key': key } });
      expect((await ask('/admin/keys.db')).body).toMatchObject({ decision: 'deny' });
      expect((await ask('/data/keys.db')).body).toMatchObject({ decision: 'deny' });
      const alerts = payloads(await webhook.waitFor(2, about(agent)));
      expect(alerts.map((alert) => alert.severity).sort()).toEqual(['critical', 'warning']);
    });

    it('a tripped rate limit is rate_limit, a warning, and not also a deny alert', async () => {
      const { agent } = await setup(gateway, [RATE_LIMITED]);
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await proxy(gateway, agent, 'GET', '/items')).status);
      expect(statuses).toEqual([200, 200, 429]);
      const alerts = await webhook.waitFor(1, about(agent));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(webhook.accepted(about(agent))).toHaveLength(1);
      expect(alerts[0].headers['x-service-trigger']).toBe('rate_limit');
      expect(payloads(alerts)).toMatchObject([{ trigger: 'rate_limit', severity: 'warning', entry: { decision: 'deny', policyName: 'two-per-minute' } }]);
    });

    it('an upstream 5xx is an error, critical; a 4xx and a 200 raise nothing', async () => {
      const { agent } = await setup(gateway, []);
      expect((await proxy(gateway, agent, 'GET', '/status/404')).status).toBe(404);
      expect((await proxy(gateway, agent, 'GET', '/echo')).status).toBe(200);
      expect((await proxy(gateway, agent, 'GET', '/status/503')).status).toBe(503);
      const alerts = payloads(await webhook.waitFor(1, about(agent)));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(webhook.accepted(about(agent))).toHaveLength(1);
      expect(alerts).toMatchObject([{ trigger: 'error', severity: 'critical', entry: { decision: 'allow', path: '/status/503' } }]);
      expect(alerts[0].message).toContain('503');
    });

    it('an upstream 5xx the caller went away before receiving (499) is still an error, critical', async () => {
      const { agent } = await setup(gateway, []);
      const { hostname, port } = new URL(gateway.url);
      // The upstream answers 503 and one chunk, then holds the body open; the caller leaves once it sees the status.
      const status = await new Promise<number>((resolve, reject) => {
        const request = http.request({ hostname, port, path: '/proxy/hold/503', headers: { authorization: `Bearer ${agent.token}` }, agent: false }, (response) => {
          resolve(response.statusCode ?? 0);
          request.destroy();
        });
        request.on('error', reject);
        request.end();
      });
      expect(status).toBe(503);
      const alerts = payloads(await webhook.waitFor(1, about(agent)));
      expect(alerts).toMatchObject([{ trigger: 'error', severity: 'critical', title: 'Upstream failed with status 503', entry: { decision: 'allow', path: '/hold/503' } }]);
      expect(alerts[0].message).toContain('the upstream answered 503, and the caller closed the connection');
    });

    it('the gateway giving up on the upstream (504) is an error, critical', async () => {
      const { agent } = await setup(gateway, []);
      expect((await proxy(gateway, agent, 'GET', '/slow/3000')).status).toBe(504);
      const alerts = payloads(await webhook.waitFor(1, about(agent)));
      expect(alerts).toMatchObject([{ trigger: 'error', severity: 'critical', title: 'Request failed with status 504' }]);
      expect(alerts[0].message).toContain('the upstream did not answer in time');
    });
  });

  describe('an organization out of monthly policy checks (429 quota_exceeded)', () => {
    async function outOfChecks(): Promise<{ org: TestOrganization; agent: Agent; key: string }> {
      // Starter: a free plan's one team member is its admin token, and /v1/check needs an API key.
      const org = await createOrganization(gateway, 'starter', 'Quota alerts org');
      const agent = (await call<Agent>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'quota-agent' } })).body;
      const key = (await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'quota key' } })).body.key;
      await useUpQuota(gateway, org.id, 25_000);
      return { org, agent, key };
    }

    it('raises one rate_limit warning naming the organization, not one per refused request', async () => {
      const { org, agent, key } = await outOfChecks();
      const traceId = `quota-trace-${Date.now()}`;
      const first = await proxy(gateway, agent, 'GET', '/items/1', { 'x-trace-id': traceId });
      expect(first.status).toBe(429);
      expect(first.body).toMatchObject({ error: 'quota_exceeded' });
      expect((await proxy(gateway, agent, 'GET', '/items/2')).status).toBe(429);
      const checked = await call(gateway.url, 'POST', '/v1/check', { body: { agentId: agent.id, plugin: 'Items', function: 'Read', action: 'read:items/3' }, headers: { 'x-api-key': key } });
      expect(checked.status).toBe(429);

      const [alert] = await webhook.waitFor(1, about(agent));
      expect(alert.headers['x-service-trigger']).toBe('rate_limit');
      expect(checkSignature(SECRET, alert)).toMatchObject({ bodySignature: true });
      const payload = alert.json as unknown as WebhookPayload;
      expect(payload).toMatchObject({
        trigger: 'rate_limit',
        severity: 'warning',
        title: `Monthly policy checks used up by organization ${org.id}`,
        entry: { traceId, agentId: agent.id, agentName: 'quota-agent', action: 'read:items/1', method: 'GET', path: '/items/1', decision: 'deny', policyName: '' },
      });
      expect(payload.message).toContain('429 quota_exceeded');
      expect(payload.entry.reason).toBe('The organization has used its monthly policy checks');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(webhook.accepted(about(agent))).toHaveLength(1);
    });

    it('is raised by a /v1/check refusal as by a proxied one', async () => {
      const { agent, key } = await outOfChecks();
      const checked = await call(gateway.url, 'POST', '/v1/check', { body: { agentId: agent.id, plugin: 'Items', function: 'Read', action: 'read:items/3' }, headers: { 'x-api-key': key } });
      expect(checked.status).toBe(429);
      expect(payloads(await webhook.waitFor(1, about(agent)))).toMatchObject([{ trigger: 'rate_limit', severity: 'warning', entry: { action: 'read:items/3', method: '', path: '', decision: 'deny' } }]);
    });
  });

  describe('alert rules', () => {
    const WATCH_PRIVILEGED_DELETES = {
      name: 'watch-privileged-deletes',
      rules: [
        { condition: 'agent.trust_tier == "privileged" and action starts_with "delete:"', action: 'alert' as const, reason: 'Privileged agent deleting' },
        { condition: 'args.path starts_with "/locked"', action: 'deny' as const, reason: 'Locked' },
      ],
    };

    it('let the request through and raise an alert with the rule reason', async () => {
      const { org, agent } = await setup(gateway, [WATCH_PRIVILEGED_DELETES], 'privileged');
      const simulated = await call(gateway.url, 'POST', '/admin/policies/simulate', {
        adminToken: org.adminToken,
        body: { input: { agent: { trust_tier: 'privileged' }, action: 'delete:orders/42' } },
      });
      expect(simulated.body).toMatchObject({ decision: 'allow', alerts: [{ policy: 'watch-privileged-deletes', rule: 'watch-privileged-deletes-0', reason: 'Privileged agent deleting' }] });
      const response = await proxy(gateway, agent, 'DELETE', '/orders/42');
      expect(response.status).toBe(200);
      expect(response.headers.get('x-service-decision')).toBe('allow');
      const [alert] = await webhook.waitFor(1, about(agent));
      expect(alert.headers['x-service-trigger']).toBe('alert_rule');
      expect(alert.json).toMatchObject({
        trigger: 'alert_rule',
        severity: 'warning',
        title: 'Alert rule watch-privileged-deletes-0 of policy watch-privileged-deletes',
        entry: { decision: 'allow', policyName: 'watch-privileged-deletes', reason: 'Privileged agent deleting', action: 'delete:orders/42' },
      });
    });

    it('make the decision they fired on not cacheable, so an SDK asks again and every firing is alerted', async () => {
      const { org, agent } = await setup(gateway, [WATCH_PRIVILEGED_DELETES], 'privileged');
      const key = (await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'cache test' } })).body.key;
      const ask = (action: string) => call<Record<string, unknown>>(gateway.url, 'POST', '/v1/check', { body: { agentId: agent.id, plugin: 'Orders', function: 'Do', action }, headers: { 'x-api-key': key } });
      expect((await ask('delete:orders/42')).body).toMatchObject({ decision: 'allow', cacheable: false });
      expect((await ask('read:orders/42')).body).toMatchObject({ decision: 'allow', cacheable: true });
    });

    it('do not fire when their condition is false, and never change a denial', async () => {
      const verified = await setup(gateway, [WATCH_PRIVILEGED_DELETES], 'verified');
      const privileged = await setup(gateway, [WATCH_PRIVILEGED_DELETES], 'privileged');
      expect((await proxy(gateway, verified.agent, 'DELETE', '/orders/42')).status).toBe(200);
      const denied = await proxy(gateway, privileged.agent, 'DELETE', '/locked/1');
      expect(denied.status).toBe(403);
      expect(denied.body).toMatchObject({ policy: 'watch-privileged-deletes', reason: 'Locked' });
      const alerts = payloads(await webhook.waitFor(2, about(privileged.agent)));
      expect(alerts.map((alert) => alert.trigger).sort()).toEqual(['alert_rule', 'deny']);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(webhook.accepted(about(verified.agent))).toEqual([]);
    });
  });
});

describe('ALERT_ON=deny, SMTP email, unsigned webhook that fails first', () => {
  let gateway: TestGateway;
  let webhook: AlertReceiver;
  let smtp: SmtpReceiver;

  beforeAll(async () => {
    [webhook, smtp] = await Promise.all([startAlertReceiver({ failFirst: 1 }), startSmtpReceiver(SMTP_USER, SMTP_PASS)]);
    // No UPSTREAM_URL: allowed requests get the gateway's own 502.
    gateway = await startGateway({
      ALERT_ON: 'deny',
      ALERT_WEBHOOK_URL: `${webhook.url}/hook`,
      ALERT_EMAIL_ENABLED: 'true',
      ALERT_EMAIL_FROM: 'gateway@alerts.test',
      ALERT_EMAIL_TO: 'oncall@acme.test',
      ALERT_SMTP_HOST: '127.0.0.1',
      ALERT_SMTP_PORT: String(smtp.port),
      ALERT_SMTP_USER: SMTP_USER,
      ALERT_SMTP_PASS: SMTP_PASS,
      ALERT_INSTANCE_NAME: 'gw-e2e-2',
      ALERT_ENVIRONMENT: uniqueEnvironment('deny'),
    });
  });
  afterAll(async () => {
    await gateway.close();
    await Promise.all([webhook.close(), smtp.close()]);
  });

  it('retries after the receiver fails (500, then 200), and mails through real SMTP', async () => {
    const { agent } = await setup(gateway, [DENY_SECRETS], 'privileged');
    const traceId = `alerts-smtp-${Date.now()}`;
    expect((await proxy(gateway, agent, 'GET', '/secret/x', { 'x-trace-id': traceId })).status).toBe(403);

    const [delivered] = await webhook.waitFor(1, about(agent));
    const attempts = webhook.requests.filter(about(agent));
    expect(attempts.map((attempt) => attempt.answered)).toEqual([500, 200]);
    expect(attempts[0].raw).toBe(attempts[1].raw);
    expect(delivered.headers['x-service-signature']).toBeUndefined();
    expect(delivered.headers['x-service-signature-v2']).toBeUndefined();
    expect(delivered.json).toMatchObject({ trigger: 'deny', severity: 'critical', instance: 'gw-e2e-2' });

    const [mail] = await smtp.waitFor(1, (received) => received.text.includes(traceId));
    expect(mail).toMatchObject({ from: 'gateway@alerts.test', to: ['oncall@acme.test'], user: SMTP_USER, subject: '[CRITICAL] Request denied by policy no-secrets' });
    for (const line of [`Agent:       ${agent.name} (${agent.id}, privileged)`, 'Action:      read:secret/x', 'Request:     GET /secret/x', 'Reason:      Secrets are off limits', 'Instance:    gw-e2e-2']) {
      expect(mail.text).toContain(line);
    }
  });

  it('raises no alert for triggers not in ALERT_ON (error, rate_limit)', async () => {
    const { agent } = await setup(gateway, [DENY_SECRETS, { name: 'one-per-minute', action: 'write:*', rules: [{ condition: 'rate_limit(per_agent, 1, 1m)', action: 'deny', reason: 'One a minute' }] }]);
    expect((await proxy(gateway, agent, 'GET', '/anything')).status).toBe(502);
    expect((await proxy(gateway, agent, 'POST', '/w')).status).toBe(502);
    expect((await proxy(gateway, agent, 'POST', '/w')).status).toBe(429);
    // A denial afterwards: once its alert has arrived, the earlier ones would have too.
    expect((await proxy(gateway, agent, 'GET', '/secret/sentinel')).status).toBe(403);
    await webhook.waitFor(1, about(agent));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(payloads(webhook.accepted(about(agent))).map((alert) => [alert.trigger, alert.entry.path])).toEqual([['deny', '/secret/sentinel']]);
  });

  it('raises no alert for an organization out of monthly checks without rate_limit in ALERT_ON', async () => {
    const { agent } = await setup(gateway, [DENY_SECRETS]);
    const quotaOrg = await createOrganization(gateway, 'free', 'Quota org, ALERT_ON=deny');
    const refused = (await call<Agent>(gateway.url, 'POST', '/admin/agents', { adminToken: quotaOrg.adminToken, body: { name: 'refused-agent' } })).body;
    await useUpQuota(gateway, quotaOrg.id, 1000);
    expect((await proxy(gateway, refused, 'GET', '/anything')).status).toBe(429);
    // A denial afterwards, by another organization's agent: once its alert has arrived, a quota alert would have too.
    expect((await proxy(gateway, agent, 'GET', '/secret/sentinel')).status).toBe(403);
    await webhook.waitFor(1, about(agent));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(webhook.accepted(about(refused))).toEqual([]);
  });
});

/** A gateway whose warning and error log lines are kept in `logs`. */
async function startLoggedGateway(env: Record<string, string>, logs: string[]): Promise<TestGateway> {
  const config = AppConfig.fromEnv(testEnv({ ...env, LOG_LEVEL: 'warn' }));
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString('utf8'));
      done();
    },
  });
  const app = await createGateway(config, pino({ level: 'warn' }, stream));
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, app, config, close: () => app.close() };
}

describe('ALERT_RATE_LIMIT shared through Redis by two gateways', () => {
  const gateways: TestGateway[] = [];
  const logs: string[] = [];
  let webhook: AlertReceiver;

  beforeAll(async () => {
    webhook = await startAlertReceiver();
    const env = {
      ALERT_ON: 'deny',
      ALERT_WEBHOOK_URL: webhook.url,
      ALERT_WEBHOOK_SECRET: SECRET,
      ALERT_RATE_LIMIT: '3',
      ALERT_ENVIRONMENT: uniqueEnvironment('rate'),
      REDIS_URL: 'redis://127.0.0.1:6379',
    };
    gateways.push(await startLoggedGateway(env, logs), await startLoggedGateway(env, logs));
  });
  afterAll(async () => {
    await Promise.all(gateways.map((gateway) => gateway.close()));
    await webhook.close();
  });

  it('sends 3 alerts a minute across both, drops the rest with a warning naming them', async () => {
    // The counter is per clock minute: start early in one.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 45_000) await new Promise((resolve) => setTimeout(resolve, 60_500 - intoMinute));
    const org = await createOrganization(gateways[0], 'enterprise', 'Alerts rate org');
    const policy = await call(gateways[0].url, 'PUT', '/admin/policies/no-secrets', {
      adminToken: org.adminToken,
      body: policyYaml(DENY_SECRETS.name, DENY_SECRETS.rules, DENY_SECRETS.action),
      headers: { 'content-type': 'application/yaml' },
    });
    expect(policy.status).toBe(201);
    const agent = (await call<Agent>(gateways[0].url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'rate-agent' } })).body;
    // Give the second gateway time to see the new policy (cross-instance events) before it decides.
    for (const gateway of gateways) {
      const deadline = Date.now() + 10_000;
      while ((await proxy(gateway, agent, 'GET', '/secret/probe')).status !== 403 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    for (let i = 0; i < 3; i++) {
      for (const gateway of gateways) expect((await proxy(gateway, agent, 'GET', `/secret/${i}`)).status).toBe(403);
    }
    await webhook.waitFor(3, about(agent));
    const rateWarnings = () => logs.filter((line) => line.includes('alert rate limit reached')).map((line) => JSON.parse(line) as { level: number; dropped: number; alertIds: string[] });
    // The first drop is warned of at once, the next second's in one line after it.
    const deadline = Date.now() + 5000;
    while (rateWarnings().reduce((total, warning) => total + warning.dropped, 0) < 5 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(webhook.accepted(about(agent))).toHaveLength(3);
    const warnings = rateWarnings();
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings.every((warning) => warning.level === 40 && warning.alertIds.every((id) => /^alert_[0-9a-f]+$/.test(id)))).toBe(true);
    expect(warnings.reduce((total, warning) => total + warning.dropped, 0)).toBeGreaterThanOrEqual(5);
    expect(logs.join('\n')).not.toContain(SECRET);
  });
});

describe('shutdown', () => {
  it('delivers the alerts of the last requests before the gateway stops', async () => {
    const webhook = await startAlertReceiver();
    try {
      const gateway = await startGateway({ ALERT_ON: 'deny', ALERT_WEBHOOK_URL: webhook.url, ALERT_ENVIRONMENT: uniqueEnvironment('shutdown') });
      const { agent } = await setup(gateway, [DENY_SECRETS]);
      expect((await proxy(gateway, agent, 'GET', '/secret/last')).status).toBe(403);
      await gateway.close();
      expect(webhook.accepted(about(agent))).toHaveLength(1);
    } finally {
      await webhook.close();
    }
  });
  it('says how many alert deliveries it gives up on, and which alerts, when the receiver does not answer before the drain ends', async () => {
    const held = new Set<net.Socket>();
    let received = '';
    const hung = net.createServer((socket) => {
      held.add(socket);
      socket.on('error', () => undefined);
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    });
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    const logs: string[] = [];
    try {
      const url = `http://127.0.0.1:${(hung.address() as AddressInfo).port}/hook`;
      const gateway = await startLoggedGateway({ ALERT_ON: 'deny', ALERT_WEBHOOK_URL: url, ALERT_ENVIRONMENT: uniqueEnvironment('abandon') }, logs);
      const { agent } = await setup(gateway, [DENY_SECRETS]);
      for (let i = 0; i < 3; i++) expect((await proxy(gateway, agent, 'GET', `/secret/${i}`)).status).toBe(403);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await gateway.close();
      const abandoned = logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === 'alert deliveries abandoned at shutdown');
      expect(abandoned).toEqual([expect.objectContaining({ level: 40, deliveries: 3 })]);
      // Named, not just counted: those the receiver was sent (and never answered) among them.
      const sent = [...received.matchAll(/"id":"(alert_[0-9a-f]+)"/g)].map((match) => match[1]);
      expect(sent.length).toBeGreaterThan(0);
      expect(abandoned[0].alertIds).toHaveLength(3);
      expect(abandoned[0].alertIds).toEqual(expect.arrayContaining(sent));
    } finally {
      // Its connections too: a listening or connected socket left behind keeps the test process from exiting.
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => hung.close(resolve));
    }
  }, 30_000);
});

describe('MODE=audit', () => {
  it('every alert of a denial it let through says it was not enforced: deny, rate_limit and alert_rule alike', async () => {
    const webhook = await startAlertReceiver();
    const gateway = await startGateway({ UPSTREAM_URL: upstream.url, MODE: 'audit', ALERT_ON: 'all', ALERT_WEBHOOK_URL: webhook.url, ALERT_RATE_LIMIT: '1000', ALERT_ENVIRONMENT: uniqueEnvironment('audit-mode') });
    try {
      const { agent } = await setup(gateway, [
        { name: 'watch-writes', action: 'write:*', rules: [{ condition: 'true', action: 'alert', reason: 'A write' }] },
        { name: 'one-per-minute', action: 'write:*', rules: [{ condition: 'rate_limit(per_agent, 1, 1m)', action: 'deny', reason: 'One a minute' }] },
        DENY_SECRETS,
      ]);
      expect((await proxy(gateway, agent, 'GET', '/secret/plans.txt')).status).toBe(200);
      expect((await proxy(gateway, agent, 'POST', '/status/201')).status).toBe(201);
      expect((await proxy(gateway, agent, 'POST', '/status/201')).status).toBe(201);
      const alerts = payloads(await webhook.waitFor(4, about(agent)));
      const denied = alerts.filter((alert) => alert.entry.decision === 'deny');
      expect(denied.map((alert) => alert.trigger).sort()).toEqual(['alert_rule', 'deny', 'rate_limit']);
      for (const alert of denied) expect(alert.message).toContain('not enforced: MODE=audit let it through');
      const allowed = alerts.filter((alert) => alert.entry.decision === 'allow');
      expect(allowed.map((alert) => [alert.trigger, alert.message.includes('not enforced')])).toEqual([['alert_rule', false]]);
    } finally {
      await gateway.close();
      await webhook.close();
    }
  });
});

describe('at start', () => {
  it('warns when ALERT_ON names triggers but no provider is configured, instead of saying nothing', async () => {
    const logs: string[] = [];
    const gateway = await startLoggedGateway({ ALERT_ON: 'deny,error' }, logs);
    try {
      const lines = logs.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines).toContainEqual(expect.objectContaining({ level: 40, triggers: ['deny', 'error'], msg: expect.stringContaining('no alert provider is configured') }));
    } finally {
      await gateway.close();
    }
  });

  it('does not warn with a provider, nor without ALERT_ON', async () => {
    const logs: string[] = [];
    const webhook = await startAlertReceiver();
    const gateways = [await startLoggedGateway({ ALERT_ON: 'deny', ALERT_WEBHOOK_URL: webhook.url }, logs), await startLoggedGateway({}, logs)];
    try {
      expect(logs.filter((line) => line.includes('no alert provider'))).toEqual([]);
    } finally {
      for (const gateway of gateways) await gateway.close();
      await webhook.close();
    }
  });
});

/**
 * A receiver like Python's stock http.server: HTTP/1.0, one request per connection, read whole
 * (content-length), answered, then the connection closed. Keeps the bodies it got.
 */
async function startOneShotReceiver(): Promise<{ url: string; bodies: string[]; close: () => Promise<void> }> {
  const bodies: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    let input = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      input = Buffer.concat([input, chunk]);
      const headEnd = input.indexOf('\r\n\r\n');
      if (headEnd < 0 || socket.writableEnded) return;
      const length = Number(/content-length: *(\d+)/i.exec(input.subarray(0, headEnd).toString('latin1'))?.[1] ?? 0);
      if (input.length < headEnd + 4 + length) return;
      bodies.push(input.subarray(headEnd + 4, headEnd + 4 + length).toString('utf8'));
      socket.end('HTTP/1.0 200 OK\r\nServer: SimpleHTTP/0.6 Python/3.12\r\ncontent-type: text/plain\r\n\r\nok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('a receiver that closes the connection after each answer (HTTP/1.0)', () => {
  it('gets every alert of a burst, each once, at the default settings', async () => {
    const receiver = await startOneShotReceiver();
    const gateway = await startGateway({ ALERT_ON: 'deny', ALERT_WEBHOOK_URL: `${receiver.url}/hook`, ALERT_ENVIRONMENT: uniqueEnvironment('http10') });
    try {
      const { agent } = await setup(gateway, [DENY_SECRETS]);
      const statuses = await Promise.all(Array.from({ length: 10 }, (_, i) => proxy(gateway, agent, 'GET', `/secret/${i}`).then((response) => response.status)));
      expect(statuses).toEqual(Array.from({ length: 10 }, () => 403));
      const mine = () => receiver.bodies.map((body) => JSON.parse(body) as WebhookPayload).filter((payload) => payload.entry.agentId === agent.id);
      const deadline = Date.now() + 10_000;
      while (mine().length < 10 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const paths = mine().map((payload) => payload.entry.path);
      expect(paths.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `/secret/${i}`).sort());
    } finally {
      await gateway.close();
      await receiver.close();
    }
  });
});

describe('ags alerts', () => {
  let webhook: AlertReceiver;
  let chat: AlertReceiver;

  beforeAll(async () => {
    [webhook, chat] = await Promise.all([startAlertReceiver(), startAlertReceiver({ failFirst: 100 })]);
  });
  afterAll(async () => {
    await Promise.all([webhook.close(), chat.close()]);
  });

  /** The CLI with only the ALERT_* variables given: it needs no database. */
  function ags(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      execFile(process.execPath, [CLI, 'alerts', ...args], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', ...env }, timeout: 30_000 }, (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
      });
    });
  }

  it('test: sends an info test alert to every provider and reports each; exit 0', async () => {
    const result = await ags({ ALERT_WEBHOOK_URL: `${webhook.url}/cli`, ALERT_WEBHOOK_SECRET: SECRET }, 'test');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^ok +webhook: http:\/\/127\.0\.0\.1:\d+\/\*\*\* \(signed\) \(1 attempt\)$/m);
    const [received] = await webhook.waitFor(1, (request) => request.path === '/cli');
    expect(checkSignature(SECRET, received)).toEqual({ bodySignature: true, timestampedSignature: true, fresh: true });
    expect(received.json).toMatchObject({ severity: 'info', trigger: 'test', title: expect.stringContaining('[TEST]') });
    expect(result.stdout).toContain((received.json as unknown as WebhookPayload).id);
  });

  it('test: a failing provider is reported and the exit status is 1', async () => {
    const result = await ags({ ALERT_WEBHOOK_URL: `${webhook.url}/cli-2`, ALERT_CHAT_WEBHOOK: `${chat.url}/services/T/B/SECRETPART` }, 'test');
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^ok +webhook: /m);
    expect(result.stdout).toMatch(/^FAILED +chat: http:\/\/127\.0\.0\.1:\d+\/services\/\*\*\* \(4 attempts\): .*answered 500$/m);
    expect(result.stdout + result.stderr).not.toContain('SECRETPART');
    expect(result.stderr).toContain('1 of 2 provider(s) failed');
  });

  it('test: a recipient the SMTP server refuses fails the email, named; retries go to it alone', async () => {
    const smtp = await startSmtpReceiver(SMTP_USER, SMTP_PASS, ['gone@acme.test']);
    try {
      const env = { ALERT_EMAIL_ENABLED: 'true', ALERT_EMAIL_FROM: 'gateway@alerts.test', ALERT_EMAIL_TO: 'oncall@acme.test,gone@acme.test', ALERT_SMTP_HOST: '127.0.0.1', ALERT_SMTP_PORT: String(smtp.port), ALERT_SMTP_USER: SMTP_USER, ALERT_SMTP_PASS: SMTP_PASS };
      const result = await ags(env, 'test');
      expect(result.code).toBe(1);
      const error = /^FAILED +email: SMTP .* \(4 attempts\): (.*)$/m.exec(result.stdout)?.[1];
      expect(error).toMatch(/gone@acme\.test.*550/);
      expect(error).not.toContain('oncall@acme.test');
      // The recipient the server took got the alert once: the retries were for the refused one only.
      expect(smtp.mails.map((mail) => mail.to)).toEqual([['oncall@acme.test']]);
    } finally {
      await smtp.close();
    }
  });

  it('config masks secrets; providers and triggers say what is on', async () => {
    // A one-segment path is the whole secret of some webhooks (webhook.site/<uuid>, ntfy.sh/<topic>).
    const env = { ALERT_ON: 'deny,error', ALERT_WEBHOOK_URL: `${webhook.url}/5f0c2a9e-1b7d-4c8e`, ALERT_WEBHOOK_SECRET: SECRET, ALERT_EMAIL_ENABLED: 'true', ALERT_EMAIL_FROM: 'a@b.test', ALERT_EMAIL_TO: 'c@d.test', ALERT_EMAIL_API_KEY: 're_secret_key', ALERT_RATE_LIMIT: '25' };
    const config = await ags(env, 'config');
    expect(config.code).toBe(0);
    expect(config.stdout).toContain('ALERT_WEBHOOK_SECRET: (set, hidden)');
    expect(config.stdout).toContain('ALERT_EMAIL_API_KEY: (set, hidden)');
    expect(config.stdout).toContain('ALERT_RATE_LIMIT: 25 per minute');
    expect(config.stdout).not.toContain(SECRET);
    expect(config.stdout).not.toContain('re_secret_key');
    const providers = await ags(env, 'providers');
    expect(providers.stdout).toMatch(/^webhook +configured: .*\(signed\)$/m);
    expect(config.stdout + providers.stdout).not.toContain('5f0c2a9e');
    expect(providers.stdout).toMatch(/^chat +not configured/m);
    expect(providers.stdout).toMatch(/^email +configured: email API .* to c@d\.test$/m);
    const triggers = await ags(env, 'triggers');
    expect(triggers.stdout).toMatch(/^deny +on /m);
    expect(triggers.stdout).toMatch(/^error +on /m);
    expect(triggers.stdout).toMatch(/^rate_limit +off /m);
  });

  it('test: posts to the webhook URL as configured, trailing slash and query kept', async () => {
    const result = await ags({ ALERT_WEBHOOK_URL: `${webhook.url}/hooks/?ref=a/` }, 'test');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(await webhook.waitFor(1, (request) => request.path.startsWith('/hooks'))).toMatchObject([{ path: '/hooks/?ref=a/' }]);
  });

  it('test: a receiver streaming an endless chunked answer costs one bounded read, and the alert counts as sent', async () => {
    const receiver = await startEndlessChunkedReceiver();
    try {
      const started = Date.now();
      const result = await ags({ ALERT_WEBHOOK_URL: `http://127.0.0.1:${receiver.port}/hook` }, 'test');
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toMatch(/^ok +webhook: .*\(1 attempt\)$/m);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await receiver.close();
    }
  });

  it('test: posts email to /emails under ALERT_EMAIL_API_URL, its query kept', async () => {
    const env = { ALERT_EMAIL_ENABLED: 'true', ALERT_EMAIL_FROM: 'a@b.test', ALERT_EMAIL_TO: 'c@d.test', ALERT_EMAIL_API_KEY: 're_key', ALERT_EMAIL_API_URL: `${webhook.url}/v1?tenant=abc` };
    const result = await ags(env, 'test');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(await webhook.waitFor(1, (request) => request.path.startsWith('/v1'))).toMatchObject([{ path: '/v1/emails?tenant=abc' }]);
  });

  it('refuses a webhook URL with credentials, naming the variable and not printing them', async () => {
    const url = webhook.url.replace('http://', 'http://hookuser:hookpass@');
    for (const name of ['ALERT_WEBHOOK_URL', 'ALERT_CHAT_WEBHOOK']) {
      const result = await ags({ [name]: `${url}/creds` }, 'test');
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(name);
      expect(result.stderr).toMatch(/credentials in the URL .* not supported/);
      expect(result.stdout + result.stderr).not.toMatch(/hookuser|hookpass/);
    }
    expect(webhook.requests.filter((request) => request.path === '/creds')).toEqual([]);
  });

  it('refuses an ALERT_SMTP_HOST that is a URL, naming the variable and not printing its password', async () => {
    const env = { ALERT_EMAIL_ENABLED: 'true', ALERT_EMAIL_FROM: 'gateway@alerts.test', ALERT_EMAIL_TO: 'oncall@acme.test', ALERT_SMTP_HOST: `smtp://mailer:${SMTP_PASS}@127.0.0.1:2525` };
    for (const command of ['config', 'providers', 'test']) {
      const result = await ags(env, command);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/ALERT_SMTP_HOST=.*expected a host name or IP address/);
      expect(result.stderr).not.toContain('needs ALERT_EMAIL_API_KEY');
      expect(result.stdout + result.stderr).not.toContain(SMTP_PASS);
    }
    // A host name, an IPv4 and an IPv6 address (bracketed or not) are taken.
    for (const host of ['localhost', 'smtp.example.test', '127.0.0.1', '::1', '[::1]']) {
      expect(await ags({ ...env, ALERT_SMTP_HOST: host }, 'config')).toMatchObject({ code: 0, stderr: '' });
    }
  });

  it('config piped into a reader that stops early (`| head -1`) ends quietly, with no stack trace', async () => {
    const child = spawn(process.execPath, [CLI, 'alerts', 'config'], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }, stdio: ['ignore', 'pipe', 'pipe'] });
    // The reader is gone before the CLI (still starting) writes its first line.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it('test without any provider fails with a clear message', async () => {
    const result = await ags({}, 'test');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('no alert provider is configured');
  });
});
