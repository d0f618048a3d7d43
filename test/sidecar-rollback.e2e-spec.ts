import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createPublicKey } from 'node:crypto';
import { call } from './support/http-client';
import { createAgent, revokeAgent, TestAgent } from './support/org-fixtures';
import { eventually, freePort, launch, ServiceProcess, SIDECAR_MAIN, waitFor } from './support/processes';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * A sidecar never goes back to an older bundle than one it applied (docs/sidecar.md "Rollback"):
 * not from a bundle.json put back in CACHE_DIR while the gateway is unreachable, not from a
 * replayed, genuinely signed older bundle served as the gateway's, and not across restarts. So
 * an agent revoked at the gateway stays revoked at the edge. Gateway in this process, the built
 * sidecar as a process.
 */

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sidecar-rollback-'));
const cacheDir = path.join(scratch, 'cache');
const processes: ServiceProcess[] = [];
let gateway: TestGateway;
let org: TestOrganization;
let agent: TestAgent;
let publicKey: string;

/** The bundle file as the sidecar keeps it: the signed bundle and its ETag. */
interface CachedBundleFile {
  bundle: { version: string };
}

beforeAll(async () => {
  gateway = await startGateway();
  org = await createOrganization(gateway, 'enterprise', 'Sidecar rollback org');
  agent = await createAgent(gateway, org, { name: 'edge-bot', trustTier: 'verified' });
  publicKey = createPublicKey(fs.readFileSync(process.env.TEST_SIGNING_KEY_FILE!)).export({ type: 'spki', format: 'pem' }).toString();
});

afterAll(async () => {
  await Promise.all(processes.map((process) => process.kill()));
  await gateway.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function startSidecar(gatewayUrl: string): Promise<ServiceProcess> {
  const sidecar = launch(SIDECAR_MAIN, await freePort(), {
    GATEWAY_URL: gatewayUrl,
    ADMIN_TOKEN: org.adminToken,
    CACHE_DIR: cacheDir,
    BUNDLE_SYNC_INTERVAL: '1',
    BUNDLE_PUBLIC_KEY: publicKey,
    LOG_LEVEL: 'warn',
  });
  processes.push(sidecar);
  await waitFor(sidecar, '/health', (status) => status === 200 || status === 503);
  return sidecar;
}

const enforce = (sidecar: ServiceProcess) => call(sidecar.url, 'POST', '/enforce', { bearer: agent.token, body: { agentId: agent.id, action: 'read:orders/1', resource: 'orders/1', context: {} } });

function cachedBundle(): string {
  return fs.readFileSync(path.join(cacheDir, 'bundle.json'), 'utf8');
}

/** A stand-in for the gateway that answers every bundle fetch with `bundle` and nothing else. */
async function replayingGateway(bundle: unknown): Promise<{ url: string; close(): Promise<void> }> {
  const text = JSON.stringify(bundle);
  const server = http.createServer((request, response) => {
    request.resume();
    if (request.url === '/api/v1/bundle') {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      return response.end(text);
    }
    response.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

it('keeps a revoked agent revoked when an older signed bundle comes back, from CACHE_DIR or from a replaying gateway, across restarts', async () => {
  const first = await startSidecar(gateway.url);
  await eventually(async () => (await enforce(first)).body.decision === 'allow', 30_000, 'the agent allowed at the edge');
  const old = cachedBundle();
  const oldVersion = (JSON.parse(old) as CachedBundleFile).bundle.version;

  await revokeAgent(gateway, org, agent.id);
  await eventually(async () => (await enforce(first)).status === 401, 30_000, 'the revocation at the edge');
  const newVersion = (JSON.parse(cachedBundle()) as CachedBundleFile).bundle.version;
  expect(Date.parse(newVersion)).toBeGreaterThan(Date.parse(oldVersion));
  await first.stop();

  // The old bundle put back, and the gateway out of reach: the sidecar fails closed, never allows.
  fs.writeFileSync(path.join(cacheDir, 'bundle.json'), old);
  const offline = await startSidecar(`http://127.0.0.1:${await freePort()}`);
  const refused = await enforce(offline);
  expect(refused.status).toBe(503);
  expect(JSON.stringify(refused.body)).toContain(`older than ${newVersion}`);
  await offline.stop();

  // The genuine old bundle replayed as the gateway's answer, CACHE_DIR's bundle gone: refused too.
  fs.rmSync(path.join(cacheDir, 'bundle.json'));
  const replay = await replayingGateway((JSON.parse(old) as CachedBundleFile).bundle);
  try {
    const replayed = await startSidecar(replay.url);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const answer = await enforce(replayed);
    expect(answer.status).toBe(503);
    expect(JSON.stringify(answer.body)).toContain(`older than ${newVersion}`);
    await replayed.stop();
  } finally {
    await replay.close();
  }

  // Back on the gateway, the current bundle is taken and the agent is still revoked.
  const online = await startSidecar(gateway.url);
  await eventually(async () => (await enforce(online)).status === 401, 30_000, 'the current bundle from the gateway');
});
