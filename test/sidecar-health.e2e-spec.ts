import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPublicKey } from 'node:crypto';
import { call } from './support/http-client';
import { freePort, HEALTH_TOKEN, launch, ServiceProcess, SIDECAR_MAIN, waitFor } from './support/processes';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * The sidecar's unauthenticated /health says only what a probe needs (docs/sidecar.md "Health":
 * status, mode, bundle, last sync, gateway reachability, counts of cached policies and agents,
 * uptime); the sidecar id, sync errors, why it fails closed and its audit buffer are shown to the
 * bearer of METRICS_TOKEN alone. Gateway in this process, the built sidecar as a process.
 */

const SIDECAR_ID = 'edge-rack-7.internal';
const PUBLIC_FIELDS = ['bundleAge', 'bundleVersion', 'cachedAgents', 'cachedPolicies', 'gatewayReachable', 'lastSync', 'lastSyncSuccess', 'mode', 'status', 'uptimeSeconds'];
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sidecar-health-'));
const processes: ServiceProcess[] = [];
let gateway: TestGateway;
let org: TestOrganization;

beforeAll(async () => {
  gateway = await startGateway();
  org = await createOrganization(gateway, 'enterprise', 'Sidecar health org');
});

afterAll(async () => {
  await Promise.all(processes.map((process) => process.kill()));
  await gateway.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function startSidecar(name: string, env: Record<string, string>): Promise<ServiceProcess> {
  const sidecar = launch(SIDECAR_MAIN, await freePort(), {
    GATEWAY_URL: gateway.url,
    ADMIN_TOKEN: org.adminToken,
    CACHE_DIR: path.join(scratch, name),
    SIDECAR_ID,
    BUNDLE_SYNC_INTERVAL: '1',
    BUNDLE_PUBLIC_KEY: createPublicKey(fs.readFileSync(process.env.TEST_SIGNING_KEY_FILE!)).export({ type: 'spki', format: 'pem' }).toString(),
    LOG_LEVEL: 'warn',
    ...env,
  });
  processes.push(sidecar);
  await waitFor(sidecar, '/health', (status, body) => status === 200 && body.bundleVersion !== null);
  return sidecar;
}

it('answers anyone with the probe’s fields only, and the bearer of METRICS_TOKEN with the whole report', async () => {
  const sidecar = await startSidecar('with-token', { METRICS_TOKEN: HEALTH_TOKEN });
  const open = await call(sidecar.url, 'GET', '/health');
  expect(open.status).toBe(200);
  expect(Object.keys(open.body).sort()).toEqual(PUBLIC_FIELDS);
  expect(open.body).toMatchObject({ status: 'healthy', mode: 'enforce', lastSyncSuccess: true, gatewayReachable: true });
  expect(open.text).not.toContain(SIDECAR_ID);

  const detailed = await call(sidecar.url, 'GET', '/health', { bearer: HEALTH_TOKEN });
  expect(detailed.status).toBe(200);
  expect(detailed.body).toMatchObject({ status: 'healthy', sidecarId: SIDECAR_ID, keyPinning: 'configured', audit: expect.objectContaining({ dropped: 0 }) });

  const wrong = await call(sidecar.url, 'GET', '/health', { bearer: `${HEALTH_TOKEN}x` });
  expect([wrong.status, wrong.body.error]).toEqual([401, 'unauthorized']);
  expect(wrong.text).not.toContain(SIDECAR_ID);
});

it('never shows the details without METRICS_TOKEN set, whatever the caller sends', async () => {
  const sidecar = await startSidecar('without-token', {});
  expect(Object.keys((await call(sidecar.url, 'GET', '/health')).body).sort()).toEqual(PUBLIC_FIELDS);
  const asked = await call(sidecar.url, 'GET', '/health', { bearer: HEALTH_TOKEN });
  expect(asked.status).toBe(401);
  expect(asked.text).not.toContain(SIDECAR_ID);
});
