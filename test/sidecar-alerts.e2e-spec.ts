import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AlertReceiver, ReceivedRequest, startAlertReceiver } from './support/alert-receivers';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { eventually, freePort, GATEWAY_MAIN, launch, ServiceProcess, SIDECAR_MAIN, waitFor } from './support/processes';
import { testDatabaseKind } from './support/test-gateway';

/**
 * Alerts of edge decisions: the built gateway (alerting to a real webhook receiver) and the built
 * sidecar as separate processes. A denial and an `alert` rule that fire at the sidecar raise the
 * same alerts as at the gateway once the sidecar's entries are ingested, and the audit trail
 * records which alert rules fired, at the edge as on the gateway.
 */

const ADMIN_TOKEN = 'sidecar-alerts-e2e-admin-token-0123456789';
/** A reason longer than the 2048 characters the audit trail keeps of a text. */
const LONG_REASON = `Long watched path read: ${'every read of it is reviewed by the security team. '.repeat(60)}`;
const POLICIES = `
policies:
  - name: watch-and-block
    match: { action: "read:*" }
    rules:
      - name: watched
        condition: args.path starts_with "/watch"
        action: alert
        reason: Watched path read
      - name: long-watched
        condition: args.path starts_with "/long"
        action: alert
        reason: ${JSON.stringify(LONG_REASON)}
      - name: secrets
        condition: args.path starts_with "/secret"
        action: deny
        reason: No secrets here
  - name: edge-limited
    match: { action: "write:*" }
    rules:
      - name: one-a-minute
        condition: rate_limit(per_agent, 1, 1m)
        action: deny
        reason: One write a minute
`;

interface Agent {
  id: string;
  token: string;
}

interface StoredEntry {
  id: string;
  source: string;
  action: string;
  decision: string;
  details: unknown;
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sidecar-alerts-'));
const policiesFile = path.join(scratch, 'policies.yaml');
const started: ServiceProcess[] = [];
let database: OwnDatabase | undefined;
let webhook: AlertReceiver;
let gateway: ServiceProcess;
let sidecar: ServiceProcess;
let agent: Agent;

beforeAll(async () => {
  fs.writeFileSync(policiesFile, POLICIES);
  if (testDatabaseKind() === 'postgres') database = await ownDatabase();
  webhook = await startAlertReceiver();
  const gatewayPort = await freePort();
  gateway = launch(GATEWAY_MAIN, gatewayPort, {
    ADMIN_TOKEN,
    PUBLIC_URL: 'http://gateway.sidecar-alerts.test',
    PDP_GRPC_PORT: '0',
    POLICIES_FILE: policiesFile,
    SIGNING_KEY_FILE: path.join(scratch, 'signing-key.pem'),
    AUDIT_FLUSH_MS: '10',
    ALERT_WEBHOOK_URL: `${webhook.url}/hook`,
    ALERT_ON: 'deny,rate_limit',
    LOG_LEVEL: 'warn',
    ...(database ? { DATABASE_URL: database.url } : { DATA_DIR: path.join(scratch, 'data') }),
  });
  started.push(gateway);
  await waitFor(gateway, '/health', (status) => status === 200, 90_000);
  const created = await call<Agent>(gateway.url, 'POST', '/admin/agents', { adminToken: ADMIN_TOKEN, body: { name: 'edge-watcher', trustTier: 'verified' } });
  expect(created.status).toBe(201);
  agent = { id: created.body.id, token: created.body.token };
  sidecar = launch(SIDECAR_MAIN, await freePort(), {
    GATEWAY_URL: `http://127.0.0.1:${gatewayPort}`,
    ADMIN_TOKEN,
    CACHE_DIR: path.join(scratch, 'cache'),
    BUNDLE_SYNC_INTERVAL: '1',
    AUDIT_FORWARD_INTERVAL_MS: '100',
    SIDECAR_ID: 'sc_alerts-edge',
    LOG_LEVEL: 'warn',
  });
  started.push(sidecar);
  await waitFor(sidecar, '/health', (status, body) => status === 200 && (body.cachedAgents as number) >= 1, 60_000);
}, 240_000);

afterAll(async () => {
  for (const process of started) await process.kill();
  await webhook?.close();
  await database?.dispose();
  fs.rmSync(scratch, { recursive: true, force: true });
}, 60_000);

const enforce = (filePath: string, action: string) => call<Record<string, unknown>>(sidecar.url, 'POST', '/enforce', { bearer: agent.token, body: { action, context: { args: { path: filePath } } } });
const about = (action: string) => (request: ReceivedRequest) => (request.json.entry as Record<string, unknown> | undefined)?.action === action;

async function storedEntry(source: string, action: string): Promise<StoredEntry> {
  let found: StoredEntry | undefined;
  await eventually(async () => {
    const page = await call<{ entries: StoredEntry[] }>(gateway.url, 'GET', `/admin/audit?source=${source}&limit=100`, { adminToken: ADMIN_TOKEN });
    found = page.body.entries.find((entry) => entry.action === action);
    return found !== undefined;
  }, 30_000, `the ${source} entry of ${action}`);
  return found!;
}

describe('alerts of decisions made at the edge', () => {
  it('an alert rule that fires at the sidecar raises an alert_rule alert once its entry is ingested', async () => {
    const answer = await enforce('/watch/report.pdf', 'read:watch/report.pdf');
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ decision: 'allow' });
    const [alert] = await webhook.waitFor(1, about('read:watch/report.pdf'), 30_000);
    expect(alert.headers['x-service-trigger']).toBe('alert_rule');
    expect(alert.json).toMatchObject({
      trigger: 'alert_rule',
      title: 'Alert rule watched of policy watch-and-block',
      entry: { decision: 'allow', reason: 'Watched path read', agentId: agent.id },
    });
    const entry = await storedEntry('sidecar', 'read:watch/report.pdf');
    expect(entry.details).toEqual({ alerts: [{ policy: 'watch-and-block', rule: 'watched', reason: 'Watched path read' }] });
  });

  it('an alert rule with a reason longer than the audit trail keeps still raises its alert, once, its reason cut', async () => {
    expect((await enforce('/long/report.pdf', 'read:long/report.pdf')).status).toBe(200);
    const alerts = await webhook.waitFor(1, about('read:long/report.pdf'), 30_000);
    expect(alerts.map((alert) => alert.json.trigger)).toEqual(['alert_rule']);
    const reason = (alerts[0].json.entry as Record<string, string>).reason;
    expect(reason.startsWith(LONG_REASON.slice(0, 2048))).toBe(true);
    expect(reason.endsWith('…[truncated]')).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(webhook.accepted(about('read:long/report.pdf'))).toHaveLength(1);
  });

  it('a denial at the sidecar raises a deny alert, and no alert_rule alert', async () => {
    expect((await enforce('/secret/keys', 'read:secret/keys')).status).toBe(200);
    const alerts = await webhook.waitFor(1, about('read:secret/keys'), 30_000);
    expect(alerts.map((alert) => alert.json.trigger)).toEqual(['deny']);
    expect((await storedEntry('sidecar', 'read:secret/keys')).details).toBeNull();
  });

  it('a rate limit tripped at the sidecar raises a rate_limit alert naming the limit, which its entry records', async () => {
    const action = 'write:edge/notes.txt';
    expect((await enforce('/edge/notes.txt', action)).body).toMatchObject({ decision: 'allow' });
    // A tripped rate limit answers 429 at the sidecar too, as at the proxy and the PDP.
    const limited = await enforce('/edge/notes.txt', action);
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ error: 'rate_limited', limit: '1/1m per_agent', retry_after: expect.any(Number) });
    const alerts = await webhook.waitFor(1, about(action), 30_000);
    expect(alerts.map((alert) => alert.json.trigger)).toEqual(['rate_limit']);
    expect(alerts[0].json.message).toContain('exceeded a rate limit (1/1m per_agent)');
    const page = await call<{ entries: StoredEntry[] }>(gateway.url, 'GET', `/admin/audit?source=sidecar&limit=100`, { adminToken: ADMIN_TOKEN });
    const denied = page.body.entries.find((entry) => entry.action === action && entry.decision === 'deny');
    expect(denied?.details).toEqual({ rateLimit: { limit: '1/1m per_agent', retryAfterSeconds: expect.any(Number) } });
  });

  it('the gateway records the alert rules that fired on its own decisions the same way', async () => {
    const key = await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: ADMIN_TOKEN, body: { name: 'sidecar alerts' } });
    const checked = await call(gateway.url, 'POST', '/api/v1/pdp/evaluate', {
      headers: { 'x-api-key': key.body.key },
      body: { agentId: agent.id, action: 'read:watch/gateway.pdf', args: { path: '/watch/gateway.pdf' } },
    });
    expect(checked.status).toBe(200);
    expect(checked.body).toMatchObject({ decision: 'DECISION_ALLOW' });
    await webhook.waitFor(1, about('read:watch/gateway.pdf'), 30_000);
    const entry = await storedEntry('pdp', 'read:watch/gateway.pdf');
    expect(entry.details).toEqual({ alerts: [{ policy: 'watch-and-block', rule: 'watched', reason: 'Watched path read' }] });
  });
});
