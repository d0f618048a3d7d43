import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { eventually, freePort, GATEWAY_MAIN, launch, ServiceProcess, SIDECAR_MAIN, waitFor } from './support/processes';
import { testDatabaseKind } from './support/test-gateway';

/**
 * The SDKs report each decision they apply from their cache as a `cached: true` event of a
 * `POST /v1/audit` batch (docs/pdp.md "Batches"). At the edge the sidecar records them in its
 * write-ahead log and forwards them with its own entries: the gateway's trail then holds each
 * application as a decision entry naming the decision it reused, as it does when the SDK reports
 * to the gateway itself. Built gateway and sidecar as separate processes, as users run them.
 */

const ADMIN_TOKEN = 'sidecar-cached-admin-token-0123456789';
const POLICIES = `policies:
  - name: edge-files
    match: { plugin: FilePlugin, function: "Read*" }
    rules:
      - name: system-paths
        condition: args.path starts_with "/etc"
        action: deny
        reason: Access to system files blocked
`;

interface AuditEntry {
  id: string;
  kind: string;
  source: string;
  action: string;
  decision: string;
  policyName: string | null;
  rule: string | null;
  reason: string | null;
  details: Record<string, unknown> | null;
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sidecar-cached-'));
const started: ServiceProcess[] = [];
let database: OwnDatabase | undefined;
let gateway: ServiceProcess;
let sidecar: ServiceProcess;
let apiKey: string;
let agentId: string;

const admin = <T = Record<string, unknown>>(method: string, route: string, body?: unknown) => call<T>(gateway.url, method, route, { adminToken: ADMIN_TOKEN, body });
const atEdge = <T = Record<string, unknown>>(route: string, body: unknown) => call<T>(sidecar.url, 'POST', route, { headers: { 'x-api-key': apiKey }, body });

beforeAll(async () => {
  const policiesFile = path.join(scratch, 'policies.yaml');
  fs.writeFileSync(policiesFile, POLICIES);
  if (testDatabaseKind() === 'postgres') database = await ownDatabase();
  const [gatewayPort, sidecarPort] = [await freePort(), await freePort()];
  const storage: Record<string, string> = database ? { DATABASE_URL: database.url } : { DATA_DIR: path.join(scratch, 'data') };
  gateway = launch(GATEWAY_MAIN, gatewayPort, { ...storage, ADMIN_TOKEN, PDP_GRPC_PORT: '0', POLICIES_FILE: policiesFile, AUDIT_FLUSH_MS: '10', LOG_LEVEL: 'warn' });
  started.push(gateway);
  await waitFor(gateway, '/health', (status) => status === 200, 90_000);
  agentId = (await admin<{ id: string }>('POST', '/admin/agents', { name: 'edge-reader', trustTier: 'verified' })).body.id;
  apiKey = (await admin<{ key: string }>('POST', '/admin/api-keys', { name: 'edge adapter' })).body.key;
  sidecar = launch(SIDECAR_MAIN, sidecarPort, {
    GATEWAY_URL: gateway.url,
    ADMIN_TOKEN,
    CACHE_DIR: path.join(scratch, 'cache'),
    BUNDLE_SYNC_INTERVAL: '1',
    AUDIT_FORWARD_INTERVAL_MS: '100',
    SIDECAR_ID: 'sc_cached-edge',
    LOG_LEVEL: 'warn',
  });
  started.push(sidecar);
  await waitFor(sidecar, '/health', (status, body) => status === 200 && (body.cachedAgents as number) >= 1, 60_000);
}, 240_000);

afterAll(async () => {
  await Promise.all(started.map((service) => service.kill()));
  await database?.dispose();
  fs.rmSync(scratch, { recursive: true, force: true });
});

it('forwards the cached decisions an SDK reports at the edge as decision entries naming the decision reused', async () => {
  const denial = { agentId, plugin: 'FilePlugin', function: 'ReadFile', arguments: { path: '/etc/shadow' } };
  let decided: { status: number; body: { decision: string; decisionId: string } } | undefined;
  await eventually(async () => (decided = await atEdge<{ decision: string; decisionId: string }>('/v1/check', denial)).status === 200, 15_000, 'the API key at the edge');
  expect(decided!.body.decision).toBe('deny');
  const reused = decided!.body.decisionId;

  // What an SDK sends after applying that denial three times from its cache.
  const events = [1, 2, 3].map(() => ({
    eventId: randomUUID(),
    agentId,
    plugin: 'FilePlugin',
    function: 'ReadFile',
    decision: 'deny',
    durationMs: 0,
    decisionId: reused,
    cached: true,
    occurredAt: new Date().toISOString(),
  }));
  const sent = await atEdge('/v1/audit', { events });
  expect([sent.status, sent.body]).toEqual([202, { accepted: 3, duplicates: 0 }]);

  const trail = async () => (await admin<{ entries: AuditEntry[] }>('GET', `/admin/audit?agentId=${agentId}&source=sidecar&limit=1000`)).body.entries;
  const applications = (entries: AuditEntry[]) => entries.filter((entry) => entry.kind === 'decision' && entry.id !== reused);
  await eventually(async () => applications(await trail()).length >= 3, 20_000, 'the cached decisions at the gateway');
  const entries = await trail();
  // The edge's own decision, forwarded as ever.
  expect(entries.filter((entry) => entry.id === reused)).toEqual([expect.objectContaining({ kind: 'decision', decision: 'deny', policyName: 'edge-files', rule: 'system-paths' })]);
  const forwarded = applications(entries);
  expect(forwarded).toHaveLength(3);
  for (const entry of forwarded) {
    expect(entry).toMatchObject({ action: 'FilePlugin.ReadFile', decision: 'deny', policyName: 'edge-files', rule: 'system-paths', reason: 'Access to system files blocked' });
    expect(entry.details).toMatchObject({ cached: true, decisionId: reused, durationMs: 0 });
  }
  expect(new Set(forwarded.map((entry) => entry.details?.eventId))).toEqual(new Set(events.map((event) => event.eventId)));
});
