import { AlertReceiver, ReceivedRequest, startAlertReceiver } from './support/alert-receivers';
import { call } from './support/http-client';
import { createAgent, proxy, putPolicies, TestAgent } from './support/org-fixtures';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * One organization never silences another's alerts (docs/alerts.md "Rate limit"): ALERT_RATE_LIMIT
 * counts per organization, in one process and through Redis, and an approval notification is
 * never dropped for it, since it is how a person learns a request waits.
 */

const LIMIT = 3;

let upstream: TestUpstream;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream.close();
});

describe.each([
  ['counted in the process', {}],
  ['counted in Redis', { REDIS_URL: 'redis://127.0.0.1:6379' }],
])('ALERT_RATE_LIMIT %s', (_how, extra: Record<string, string>) => {
  let webhook: AlertReceiver;
  let gateway: TestGateway;

  beforeAll(async () => {
    webhook = await startAlertReceiver();
    gateway = await startGateway({
      UPSTREAM_URL: upstream.url,
      ALERT_ON: 'deny',
      ALERT_WEBHOOK_URL: webhook.url,
      ALERT_RATE_LIMIT: String(LIMIT),
      ALERT_ENVIRONMENT: `tenancy-${process.pid}-${Date.now()}`,
      ...extra,
    });
  });
  afterAll(async () => {
    await gateway.close();
    await webhook.close();
  });

  async function tenant(name: string): Promise<{ org: TestOrganization; agent: TestAgent }> {
    const org = await createOrganization(gateway, 'enterprise', name);
    await putPolicies(gateway, org, [{ name: 'no-secrets', action: 'read:secret*', condition: 'agent.trust_tier < privileged', reason: 'no secrets' }]);
    const held = 'name: big-refunds\nmatch: { action: "write:refunds*" }\nrules:\n  - condition: args.amount > 100\n    action: require_approval\n    reason: Refunds over 100 need a person\n';
    const put = await call(gateway.url, 'PUT', '/admin/policies/big-refunds', { adminToken: org.adminToken, body: held, headers: { 'content-type': 'application/yaml' } });
    expect([200, 201]).toContain(put.status);
    return { org, agent: await createAgent(gateway, org, { name: `${name} agent` }) };
  }

  const of = (agent: TestAgent, trigger: string) => (request: ReceivedRequest) => request.json.trigger === trigger && (request.json.entry as { agentId?: string }).agentId === agent.id;

  it('keeps one organization’s alerts and approval notifications when another floods the limit, and never drops a notification for it', async () => {
    // The counter is per clock minute: start early in one.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 40_000) await new Promise((resolve) => setTimeout(resolve, 60_500 - intoMinute));
    const noisy = await tenant('Noisy org');
    const quiet = await tenant('Quiet org');

    for (let i = 0; i < 12; i++) expect((await proxy(gateway, noisy.agent.token, 'GET', `/secret/${i}`)).status).toBe(403);
    await webhook.waitFor(LIMIT, of(noisy.agent, 'deny'));

    expect((await proxy(gateway, quiet.agent.token, 'GET', '/secret/quiet')).status).toBe(403);
    const held = await call(gateway.url, 'POST', '/proxy/refunds/1', { bearer: quiet.agent.token, body: JSON.stringify({ amount: 500 }), headers: { 'content-type': 'application/json' } });
    expect(held.status).toBe(202);
    expect(await webhook.waitFor(1, of(quiet.agent, 'deny'))).toHaveLength(1);
    expect(await webhook.waitFor(1, of(quiet.agent, 'approval'))).toHaveLength(1);

    // The noisy organization is over its limit: its denials are dropped, its approval notifications are not.
    for (let i = 0; i < 2; i++) {
      const waiting = await call(gateway.url, 'POST', `/proxy/refunds/${i + 10}`, { bearer: noisy.agent.token, body: JSON.stringify({ amount: 500 + i }), headers: { 'content-type': 'application/json' } });
      expect(waiting.status).toBe(202);
    }
    expect(await webhook.waitFor(2, of(noisy.agent, 'approval'))).toHaveLength(2);
    expect(webhook.accepted(of(noisy.agent, 'deny'))).toHaveLength(LIMIT);
  });
});
