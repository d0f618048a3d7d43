import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { within } from './support/gateway-process';
import { call } from './support/http-client';
import { freePort, launch, ServiceProcess, SIDECAR_MAIN, waitFor } from './support/processes';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * The built sidecar (`node dist/src/sidecar/main.js`, as `npm run start:sidecar` runs it) ends
 * a SIGTERM or SIGINT with exit code 0 once it has shut down cleanly, as the gateway does: a
 * process manager reads 143 (killed by the signal) as a failure (issue #30).
 */

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sidecar-shutdown-'));
let gateway: TestGateway;
let org: TestOrganization;
let agent: { id: string; token: string };
const started: ServiceProcess[] = [];

beforeAll(async () => {
  gateway = await startGateway();
  org = await createOrganization(gateway, 'enterprise', 'Sidecar shutdown org');
  const created = await call<{ id: string; token: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'edge-agent' } });
  expect(created.status).toBe(201);
  agent = created.body;
});

afterAll(async () => {
  await Promise.all(started.map((sidecar) => sidecar.kill()));
  await gateway?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function startSidecar(name: string): Promise<ServiceProcess> {
  const sidecar = launch(SIDECAR_MAIN, await freePort(), {
    GATEWAY_URL: gateway.url,
    ADMIN_TOKEN: org.adminToken,
    CACHE_DIR: path.join(scratch, name),
    BUNDLE_SYNC_INTERVAL: '1',
    AUDIT_FORWARD_INTERVAL_MS: '100',
    LOG_LEVEL: 'info',
  });
  started.push(sidecar);
  await waitFor(sidecar, '/health', (status) => status === 200, 60_000);
  return sidecar;
}

it.each(['SIGTERM', 'SIGINT'] as const)('exits 0 on %s after a clean shutdown', async (signal) => {
  const sidecar = await startSidecar(signal.toLowerCase());
  const traceId = `sidecar-${signal}-${Date.now()}`;
  const decided = await call(sidecar.url, 'POST', '/enforce', { bearer: agent.token, body: { agentId: agent.id, action: 'read:reports' }, headers: { 'x-trace-id': traceId } });
  expect(decided.status).toBe(200);

  sidecar.child.kill(signal);
  const exit = await within(sidecar.exit, 30_000);
  expect(exit).toEqual({ code: 0, signal: null });
  expect(sidecar.output().stdout).toContain('shutdown complete');
});
