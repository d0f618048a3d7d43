import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { within } from './support/gateway-process';
import { HalfSentRequest } from './support/half-sent-request';
import { call } from './support/http-client';
import { eventually, freePort, launch, ServiceProcess, SIDECAR_MAIN, waitFor } from './support/processes';
import { PromSample, sampleValue, scrape } from './support/prometheus-text';
import { TcpRelay } from './support/tcp-relay';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * The edge sidecar as an operator runs it (`node dist/src/sidecar/main.js`), docs/observability.md:
 * its readiness (`/health/ready`: 503 without a valid bundle and once shutdown has begun), its
 * metrics on METRICS_PORT (bundle, gateway link, decisions, audit forwarding), its request log
 * (LOG_REQUESTS), and the log telling when the gateway goes away and comes back. The gateway is
 * reached through a TCP relay the test closes and opens.
 */

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sidecar-operations-'));
let gateway: TestGateway;
let org: TestOrganization;
let agent: { id: string; token: string };
let relay: TcpRelay;
let sidecar: ServiceProcess;
let metricsUrl: string;

beforeAll(async () => {
  gateway = await startGateway();
  org = await createOrganization(gateway, 'enterprise', 'Sidecar operations org');
  const created = await call<{ id: string; token: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'edge-agent' } });
  expect(created.status).toBe(201);
  agent = created.body;
  relay = await TcpRelay.listen(await freePort(), Number(new URL(gateway.url).port));
  // The gateway is away when the sidecar starts.
  await relay.close();
  const metricsPort = await freePort();
  metricsUrl = `http://127.0.0.1:${metricsPort}`;
  sidecar = launch(SIDECAR_MAIN, await freePort(), {
    GATEWAY_URL: `http://127.0.0.1:${relay.port}`,
    ADMIN_TOKEN: org.adminToken,
    CACHE_DIR: path.join(scratch, 'cache'),
    BUNDLE_SYNC_INTERVAL: '1',
    AUDIT_FORWARD_INTERVAL_MS: '100',
    METRICS_PORT: String(metricsPort),
    LOG_REQUESTS: 'true',
    LOG_LEVEL: 'info',
  });
  await waitFor(sidecar, '/health', (status) => status === 503, 60_000);
});

afterAll(async () => {
  await sidecar?.kill();
  await relay?.close();
  await gateway?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

function logLines(): Array<Record<string, unknown>> {
  return sidecar
    .output()
    .stdout.split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function logged(message: string): Array<Record<string, unknown>> {
  return logLines().filter((line) => line.msg === message);
}

const AWAY = 'gateway unreachable: deciding on the bundle in force, audit entries kept in CACHE_DIR until it is back';
const BACK = 'gateway reachable again: bundle sync and audit forwarding resume';

it('is not ready without a bundle, says once that the gateway is away, and shows it in its metrics', async () => {
  const ready = await call<{ status: string; reasons: string[] }>(sidecar.url, 'GET', '/health/ready');
  expect(ready.status).toBe(503);
  expect(ready.body.status).toBe('not_ready');
  expect(ready.body.reasons).toEqual([expect.stringMatching(/^no valid policy bundle: /)]);

  // Several fetches fail (backoff from 1 s), and the log says so once.
  await eventually(async () => (sampleValue(await scrape(metricsUrl), 'agentgov_bundle_syncs_total', { result: 'failed' }) ?? 0) >= 2, 15_000, 'two failed fetches');
  expect(logged(AWAY)).toEqual([expect.objectContaining({ level: 'warn', gateway: `http://127.0.0.1:${relay.port}`, lastContact: null })]);
  const samples = await scrape(metricsUrl);
  expect(sampleValue(samples, 'agentgov_bundle_valid')).toBe(0);
  expect(sampleValue(samples, 'agentgov_gateway_reachable')).toBe(0);
  expect(sampleValue(samples, 'agentgov_bundle_age_seconds')).toBeUndefined();
});

it('is ready once a bundle is in force, and says the gateway is back', async () => {
  await relay.open();
  await eventually(async () => (await call(sidecar.url, 'GET', '/health/ready')).status === 200, 20_000, 'ready with a bundle');
  expect(logged(BACK)).toEqual([expect.objectContaining({ level: 'info', awayMs: expect.any(Number) })]);
  const samples = await scrape(metricsUrl);
  expect(sampleValue(samples, 'agentgov_bundle_valid')).toBe(1);
  expect(sampleValue(samples, 'agentgov_gateway_reachable')).toBe(1);
  expect(sampleValue(samples, 'agentgov_bundle_syncs_total', { result: 'applied' })).toBe(1);
  expect(sampleValue(samples, 'agentgov_bundle_age_seconds')).toBeGreaterThanOrEqual(0);
});

it('counts its decisions and requests, logs each /enforce, and keeps the audit entries while the gateway is away', async () => {
  const before = await scrape(metricsUrl);
  for (const traceId of ['edge-access-1', 'edge-access-2']) {
    const decided = await call(sidecar.url, 'POST', '/enforce', { bearer: agent.token, body: { agentId: agent.id, action: 'read:reports' }, headers: { 'x-trace-id': traceId } });
    expect(decided.status).toBe(200);
  }
  const after = await scrape(metricsUrl);
  const growth = (name: string, labels: Record<string, string>) => (sampleValue(after, name, labels) ?? 0) - (sampleValue(before, name, labels) ?? 0);
  expect(growth('agentgov_decisions_total', { source: 'sidecar', result: 'allow' })).toBe(2);
  expect(growth('agentgov_http_requests_total', { route: '/enforce', method: 'POST', status: '200' })).toBe(2);
  expect(growth('agentgov_decision_duration_seconds_count', { source: 'sidecar' })).toBe(2);
  expect(logLines().filter((line) => line.level === 'access' && line.route === '/enforce')).toEqual([
    expect.objectContaining({ method: 'POST', path: '/enforce', status: 200, traceId: 'edge-access-1', durationMs: expect.any(Number) }),
    expect.objectContaining({ method: 'POST', path: '/enforce', status: 200, traceId: 'edge-access-2' }),
  ]);
  // Probes are not requests of the agents: no request log line for them.
  expect(logLines().filter((line) => line.level === 'access' && String(line.route).startsWith('/health'))).toEqual([]);
  await eventually(async () => sampleValue(await scrape(metricsUrl), 'agentgov_audit_pending_entries') === 0, 10_000, 'the entries forwarded');
  expect(sampleValue(await scrape(metricsUrl), 'agentgov_audit_entries_forwarded_total')).toBeGreaterThanOrEqual(2);

  await relay.close();
  const decided = await call(sidecar.url, 'POST', '/enforce', { bearer: agent.token, body: { agentId: agent.id, action: 'read:reports' } });
  expect(decided.status).toBe(200);
  await eventually(async () => logged(AWAY).length === 2, 15_000, 'the gateway said away again');
  let away: PromSample[] = [];
  await eventually(async () => {
    away = await scrape(metricsUrl);
    return (sampleValue(away, 'agentgov_audit_forward_failures_total') ?? 0) > 0;
  }, 10_000, 'a failed forward');
  expect(sampleValue(away, 'agentgov_audit_pending_entries')).toBe(1);
  expect(sampleValue(away, 'agentgov_audit_oldest_pending_seconds')).toBeGreaterThan(0);
  expect(sampleValue(away, 'agentgov_gateway_reachable')).toBe(0);
  // Still ready: it decides on the bundle in force.
  expect((await call(sidecar.url, 'GET', '/health/ready')).status).toBe(200);

  await relay.open();
  await eventually(async () => logged(BACK).length === 2 && sampleValue(await scrape(metricsUrl), 'agentgov_audit_pending_entries') === 0, 20_000, 'the gateway back, the entry forwarded');
});

it('answers 503 `shutting down` to a readiness probe that arrives once SIGTERM has begun the shutdown', async () => {
  const probe = await HalfSentRequest.begin(sidecar.url, '/health/ready');
  try {
    sidecar.child.kill('SIGTERM');
    await eventually(async () => sidecar.output().stdout.includes('shutting down'), 10_000, 'the shutdown begun');
    const answer = await probe.finish();
    expect(answer.status).toBe(503);
    expect(answer.body).toMatchObject({ status: 'not_ready', reasons: ['shutting down'] });
  } finally {
    probe.destroy();
  }
  expect(await within(sidecar.exit, 30_000)).toEqual({ code: 0, signal: null });
});
