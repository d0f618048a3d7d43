import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, JWK, SignJWT } from 'jose';
import { BundleContent, bundleContent, signBundle, SignedBundle } from '../src/core/edge-protocol/bundle-format';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { eventually, freePort, GATEWAY_MAIN, launch, ServiceProcess, SIDECAR_MAIN, waitFor, HEALTH_TOKEN, waitForHealth } from './support/processes';
import { testDatabaseKind } from './support/test-gateway';

/**
 * Whom the edge sidecar trusts, as users run it (the built gateway and sidecar as processes):
 * with BUNDLE_PUBLIC_KEY nothing written to CACHE_DIR changes which bundles it takes; a bundle
 * dated ahead of its clock is never put in force, so it cannot lock genuine ones out; without
 * BUNDLE_PUBLIC_KEY every start warns; a sidecar token fetches bundles and forwards audit and
 * opens no other admin route; no error echoes a credential.
 */

const ADMIN_TOKEN = 'sidecar-trust-e2e-admin-token-0123456789';
const PUBLIC_URL = 'http://gateway.sidecar-trust.test';
const YEAR_MS = 365 * 24 * 3600 * 1000;

interface Agent {
  id: string;
  token: string;
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sidecar-trust-'));
const signingKeyFile = path.join(scratch, 'signing-key.pem');
const publicKeyFile = path.join(scratch, 'gateway-public.pem');
const attacker = generateKeyPairSync('ed25519');
const attackerJwk: JWK = { ...(attacker.publicKey.export({ format: 'jwk' }) as JWK), kid: 'attacker-key', alg: 'EdDSA', use: 'sig' };
let database: OwnDatabase | undefined;
let gateway: ServiceProcess;
let gatewayKey: { privateKey: KeyObject; kid: string };
let publicPem: string;
let reader: Agent;
const started: ServiceProcess[] = [];

/**
 * Passes everything on to the gateway, except that while `served` is set it answers bundle
 * fetches with it: a gateway instance serving a bundle its clock dated ahead.
 */
class BundleRelay {
  served: SignedBundle | null = null;
  url = '';
  private server!: http.Server;

  async start(target: string): Promise<void> {
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        if (request.url === '/api/v1/bundle' && this.served !== null) {
          const text = JSON.stringify(this.served);
          response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
          return response.end(text);
        }
        void this.forward(target, request, Buffer.concat(chunks), response);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async forward(target: string, request: http.IncomingMessage, body: Buffer, response: http.ServerResponse): Promise<void> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (typeof value === 'string' && !['host', 'connection', 'content-length', 'keep-alive'].includes(name)) headers[name] = value;
    }
    try {
      const answer = await fetch(`${target}${request.url}`, { method: request.method, headers, body: request.method === 'GET' ? undefined : body });
      const text = Buffer.from(await answer.arrayBuffer());
      const passed: Record<string, string> = {};
      for (const name of ['content-type', 'etag', 'x-sidecar-bundle-version']) {
        const value = answer.headers.get(name);
        if (value !== null) passed[name] = value;
      }
      response.writeHead(answer.status, passed);
      response.end(text);
    } catch {
      response.destroy();
    }
  }
}

const admin = <T = Record<string, unknown>>(method: string, route: string, body?: unknown) => call<T>(gateway.url, method, route, { adminToken: ADMIN_TOKEN, body });

async function createAgent(name: string): Promise<Agent> {
  const created = await admin<Agent>('POST', '/admin/agents', { name, trustTier: 'verified', tags: [] });
  expect(created.status).toBe(201);
  return { id: created.body.id, token: created.body.token };
}

async function startSidecar(cacheDir: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const sidecar = launch(SIDECAR_MAIN, await freePort(), {
    METRICS_TOKEN: HEALTH_TOKEN,
    GATEWAY_URL: gateway.url,
    ADMIN_TOKEN,
    CACHE_DIR: cacheDir,
    BUNDLE_SYNC_INTERVAL: '1',
    AUDIT_FORWARD_INTERVAL_MS: '100',
    LOG_LEVEL: 'warn',
    ...env,
  });
  started.push(sidecar);
  await waitForHealth(sidecar, (status) => status === 200 || status === 503);
  return sidecar;
}

/** The first sync is over (whatever became of it). */
const synced = (sidecar: ServiceProcess) => waitForHealth(sidecar, (_status, body) => body.lastSync !== null && body.lastSync !== undefined, 20_000);

const enforce = (sidecar: ServiceProcess, agent: Agent, body: Record<string, unknown> = {}) =>
  call(sidecar.url, 'POST', '/enforce', { bearer: agent.token, body: { agentId: agent.id, action: 'read:docs/a', resource: 'docs/a', ...body } });

/** The organization's bundle as the gateway serves it now. */
async function genuineBundle(): Promise<SignedBundle> {
  const answer = await admin<SignedBundle>('GET', '/api/v1/bundle');
  expect(answer.status).toBe(200);
  return answer.body;
}

/** `content` signed with the gateway's own key: what a gateway whose clock ran ahead would have served. */
function signedByGateway(content: BundleContent): SignedBundle {
  return signBundle(content, { privateKey: gatewayKey.privateKey, kid: gatewayKey.kid, alg: 'EdDSA' });
}

const yearAhead = () => new Date(Date.now() + YEAR_MS).toISOString();

/** The sidecar's JSON log lines at `level`. */
function logLines(sidecar: ServiceProcess, level: string): Array<Record<string, unknown>> {
  return sidecar
    .output()
    .stdout.split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.level === level);
}

const cachedBundle = (cacheDir: string) => (JSON.parse(fs.readFileSync(path.join(cacheDir, 'bundle.json'), 'utf8')) as { bundle: SignedBundle }).bundle;

beforeAll(async () => {
  if (testDatabaseKind() === 'postgres') database = await ownDatabase();
  const env: Record<string, string> = {
    ADMIN_TOKEN,
    PUBLIC_URL,
    PDP_GRPC_PORT: '0',
    POLICIES_FILE: path.resolve(__dirname, '../config/policies.yaml'),
    SIGNING_KEY_FILE: signingKeyFile,
    AUDIT_FLUSH_MS: '10',
    LOG_LEVEL: 'warn',
  };
  if (database) env.DATABASE_URL = database.url;
  else env.DATA_DIR = path.join(scratch, 'data');
  gateway = launch(GATEWAY_MAIN, await freePort(), env);
  started.push(gateway);
  await waitFor(gateway, '/health', (status) => status === 200, 90_000);
  // The gateway made its key at start; the test holds it as the gateway's operator does.
  const privateKey = createPrivateKey(fs.readFileSync(signingKeyFile, 'utf8'));
  gatewayKey = { privateKey, kid: await calculateJwkThumbprint(createPublicKey(privateKey).export({ format: 'jwk' }) as JWK) };
  publicPem = createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString();
  fs.writeFileSync(publicKeyFile, publicPem);
  reader = await createAgent('trust-reader');
}, 120_000);

afterAll(async () => {
  for (const process of started) await process.kill();
  await database?.dispose();
  fs.rmSync(scratch, { recursive: true, force: true });
}, 60_000);

describe('BUNDLE_PUBLIC_KEY against someone who can write CACHE_DIR', () => {
  it('refuses a cached bundle re-signed with another key and the pinned key file swapped, and takes the genuine one again', async () => {
    const cacheDir = path.join(scratch, 'cache-attacked');
    const first = await startSidecar(cacheDir, { BUNDLE_PUBLIC_KEY: publicKeyFile });
    const genuine = await waitForHealth(first, (status, body) => status === 200 && body.bundleVersion !== null, 20_000);
    await first.stop();

    // The attacker's bundle: one more agent of theirs, their key as the only one, a newer version.
    const original = cachedBundle(cacheDir);
    const intruder = { id: 'agent_intruder', name: 'intruder', trustTier: 'privileged', tags: [], revoked: false };
    const forged = signBundle(
      { ...bundleContent(original), version: new Date(Date.parse(original.version) + 1000).toISOString(), agents: [...original.agents, intruder], keys: [attackerJwk] },
      { privateKey: attacker.privateKey, kid: 'attacker-key', alg: 'EdDSA' },
    );
    fs.writeFileSync(path.join(cacheDir, 'bundle.json'), JSON.stringify({ etag: null, bundle: forged }));
    fs.writeFileSync(path.join(cacheDir, 'gateway-key.json'), JSON.stringify(attackerJwk));
    const intruderToken = await new SignJWT({ name: 'intruder', tier: 'privileged', tags: [], org: original.orgId })
      .setProtectedHeader({ alg: 'EdDSA', kid: 'attacker-key' })
      .setSubject('agent_intruder')
      .setIssuer(PUBLIC_URL)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(attacker.privateKey);

    // With the gateway away the forged cache is all there is: refused, so nothing is decided with it.
    const offline = await startSidecar(cacheDir, { BUNDLE_PUBLIC_KEY: publicKeyFile, GATEWAY_URL: `http://127.0.0.1:${await freePort()}` });
    const health = await synced(offline);
    expect(health).toMatchObject({ status: 'fail_closed', bundleVersion: null });
    expect(health.failClosedReason).toMatch(/cached bundle refused: signature does not verify/);
    const refused = await call(offline.url, 'POST', '/enforce', { bearer: intruderToken, body: { agentId: 'agent_intruder', action: 'read:docs/a' } });
    expect(refused.status).toBe(503);
    expect(logLines(offline, 'warn').some((line) => line.msg === 'bundle refused' && line.from === 'cache')).toBe(true);
    await offline.stop();

    const online = await startSidecar(cacheDir, { BUNDLE_PUBLIC_KEY: publicKeyFile });
    await waitForHealth(online, (status, body) => status === 200 && body.bundleVersion === genuine.bundleVersion, 20_000);
    expect((await call(online.url, 'POST', '/enforce', { bearer: intruderToken, body: { agentId: 'agent_intruder', action: 'read:docs/a' } })).status).toBe(401);
    expect((await enforce(online, reader)).body).toMatchObject({ decision: 'allow' });
    expect(cachedBundle(cacheDir).signature.kid).toBe(gatewayKey.kid);
    await online.stop();
  });

  it('refuses to start with a private key as BUNDLE_PUBLIC_KEY, without printing it', async () => {
    const privatePem = gatewayKey.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const sidecar = launch(SIDECAR_MAIN, await freePort(), { METRICS_TOKEN: HEALTH_TOKEN, GATEWAY_URL: gateway.url, ADMIN_TOKEN, CACHE_DIR: path.join(scratch, 'cache-private'), BUNDLE_PUBLIC_KEY: privatePem });
    started.push(sidecar);
    expect((await sidecar.exit).code).toBe(1);
    const { stdout, stderr } = sidecar.output();
    expect(stderr).toContain('BUNDLE_PUBLIC_KEY: a private key, not a public one');
    const body = privatePem.split('\n')[1];
    expect(stdout + stderr).not.toContain(body);
  });
});

describe('bundle versions ahead of the sidecar’s clock', () => {
  it('does not put in force a cached bundle dated a year ahead (even one the gateway key signed) and applies the genuine one', async () => {
    const cacheDir = path.join(scratch, 'cache-future');
    fs.mkdirSync(cacheDir, { recursive: true });
    const genuine = await genuineBundle();
    // Revokes the reader: were it in force, the reader would be locked out for a year.
    const future = signedByGateway({ ...bundleContent(genuine), version: yearAhead(), agents: genuine.agents.map((agent) => ({ ...agent, revoked: true })), revoked: genuine.agents.map((agent) => agent.id) });
    fs.writeFileSync(path.join(cacheDir, 'bundle.json'), JSON.stringify({ etag: null, bundle: future }));

    const sidecar = await startSidecar(cacheDir, { BUNDLE_PUBLIC_KEY: publicPem });
    const health = await waitForHealth(sidecar, (status, body) => status === 200 && body.lastSyncSuccess === true, 20_000);
    expect(health.bundleVersion).toBe(genuine.version);
    expect((await enforce(sidecar, reader)).body).toMatchObject({ decision: 'allow', bundleVersion: genuine.version });
    expect(logLines(sidecar, 'warn').some((line) => line.msg === 'bundle refused' && /ahead of this sidecar's clock/.test(String(line.reason)))).toBe(true);
    // The genuine bundle replaced it on disk: a restart starts from it.
    expect(cachedBundle(cacheDir).version).toBe(genuine.version);
    await sidecar.stop();
  });

  describe('fetched from the gateway', () => {
    const relay = new BundleRelay();
    let sidecar: ServiceProcess;

    beforeAll(async () => {
      await relay.start(gateway.url);
      sidecar = await startSidecar(path.join(scratch, 'cache-fetched-future'), { GATEWAY_URL: relay.url, BUNDLE_PUBLIC_KEY: publicPem });
      await waitForHealth(sidecar, (status, body) => status === 200 && body.bundleVersion !== null, 20_000);
    });
    afterAll(() => relay.close());

    it('refuses a bundle dated a year ahead, keeps the one in force, and applies the next genuine bundle', async () => {
      const genuine = await genuineBundle();
      relay.served = signedByGateway({ ...bundleContent(genuine), version: yearAhead(), agents: genuine.agents.map((agent) => ({ ...agent, revoked: true })), revoked: genuine.agents.map((agent) => agent.id) });
      const refused = await waitForHealth(sidecar, (_status, body) => typeof body.lastSyncError === 'string' && /ahead of this sidecar's clock/.test(body.lastSyncError), 20_000);
      expect(refused).toMatchObject({ status: 'healthy', bundleVersion: genuine.version });
      expect((await enforce(sidecar, reader)).body).toMatchObject({ decision: 'allow', bundleVersion: genuine.version });

      relay.served = null;
      const newcomer = await createAgent('trust-newcomer');
      const next = await genuineBundle();
      expect(Date.parse(next.version)).toBeGreaterThan(Date.parse(genuine.version));
      await waitForHealth(sidecar, (_status, body) => body.bundleVersion === next.version, 20_000);
      expect((await enforce(sidecar, newcomer)).body).toMatchObject({ decision: 'allow', bundleVersion: next.version });
    });
  });
});

describe('without BUNDLE_PUBLIC_KEY', () => {
  it('warns at every start that it trusts the key pinned in CACHE_DIR, naming BUNDLE_PUBLIC_KEY', async () => {
    const cacheDir = path.join(scratch, 'cache-tofu');
    const trustWarnings = (sidecar: ServiceProcess) => logLines(sidecar, 'warn').filter((line) => String(line.msg).includes('BUNDLE_PUBLIC_KEY is not set'));
    for (const start of ['first', 'second']) {
      const sidecar = await startSidecar(cacheDir);
      await waitForHealth(sidecar, (status, body) => status === 200 && body.bundleVersion !== null, 20_000);
      expect({ start, warnings: trustWarnings(sidecar).length }).toEqual({ start, warnings: 1 });
      await sidecar.stop();
    }
    expect(fs.existsSync(path.join(cacheDir, 'gateway-key.json'))).toBe(true);
    const pinned = await startSidecar(path.join(scratch, 'cache-pinned'), { BUNDLE_PUBLIC_KEY: publicPem });
    await waitForHealth(pinned, (status, body) => status === 200 && body.bundleVersion !== null, 20_000);
    expect(trustWarnings(pinned)).toEqual([]);
    await pinned.stop();
  });
});

describe('a sidecar token', () => {
  let token: string;
  let tokenId: string;
  let sidecar: ServiceProcess;

  it('is issued once and listed without the token', async () => {
    const created = await admin<{ id: string; token: string; name: string; createdAt: string }>('POST', '/admin/sidecar-tokens', { name: 'edge-trust' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: expect.stringMatching(/^sctk_/), token: expect.stringMatching(/^sct_/), name: 'edge-trust' });
    ({ token, id: tokenId } = created.body);
    const listed = await admin<{ sidecarTokens: Array<Record<string, unknown>> }>('GET', '/admin/sidecar-tokens');
    expect(listed.status).toBe(200);
    expect(listed.body.sidecarTokens).toContainEqual({ id: tokenId, name: 'edge-trust', prefix: token.slice(0, 8), createdAt: created.body.createdAt, revokedAt: null });
    expect(listed.text).not.toContain(token);
  });

  it('is documented with the admin-token scheme, and a bad name is a 400 naming it', async () => {
    const document = (await call<{ paths: Record<string, Record<string, { security?: Array<Record<string, unknown>> }>> }>(gateway.url, 'GET', '/docs-json')).body;
    expect(Object.keys(document.paths['/admin/sidecar-tokens'])).toEqual(expect.arrayContaining(['get', 'post']));
    expect(Object.keys(document.paths['/admin/sidecar-tokens/{id}'])).toEqual(['delete']);
    for (const operation of [document.paths['/admin/sidecar-tokens'].post, document.paths['/admin/sidecar-tokens/{id}'].delete]) {
      expect(operation.security).toEqual([{ 'admin-token': [] }]);
    }
    const invalid = await admin('POST', '/admin/sidecar-tokens', { name: 5 });
    expect(invalid.status).toBe(400);
    expect(invalid.body.message).toMatch(/name/);
  });

  it('lets a sidecar sync its bundle and forward its audit', async () => {
    sidecar = await startSidecar(path.join(scratch, 'cache-token'), { ADMIN_TOKEN: token, BUNDLE_PUBLIC_KEY: publicPem, SIDECAR_ID: 'sc_trust-token' });
    await waitForHealth(sidecar, (status, body) => status === 200 && body.bundleVersion !== null && body.lastSyncSuccess === true, 20_000);
    const decided = await enforce(sidecar, reader, { action: 'read:docs/by-token', resource: 'docs/by-token' });
    expect(decided.body).toMatchObject({ decision: 'allow' });
    await eventually(
      async () => {
        const audit = await admin<{ entries: Array<{ action: string }> }>('GET', `/admin/audit?agentId=${reader.id}&source=sidecar&limit=1000`);
        return audit.body.entries.some((entry) => entry.action === 'read:docs/by-token');
      },
      20_000,
      'the edge decision in the gateway’s trail',
    );
    const fleet = await admin<{ sidecars: Array<{ id: string; lastSeq: number }> }>('GET', '/admin/sidecars');
    expect(fleet.body.sidecars.find((entry) => entry.id === 'sc_trust-token')?.lastSeq).toBeGreaterThanOrEqual(1);
  });

  it.each([
    ['GET', '/admin/agents'],
    ['POST', '/admin/agents'],
    ['GET', '/admin/sidecars'],
    ['GET', '/admin/audit'],
    ['GET', '/admin/policies'],
    ['POST', '/admin/api-keys'],
    ['GET', '/admin/sidecar-tokens'],
    ['POST', '/admin/sidecar-tokens'],
  ])('is refused by %s %s', async (method, route) => {
    const answer = await call(gateway.url, method, route, { adminToken: token, body: method === 'POST' ? { name: 'x', trustTier: 'verified' } : undefined });
    expect([401, 403]).toContain(answer.status);
    expect(answer.text).not.toContain(token);
  });

  it('stops working once revoked', async () => {
    const revoked = await admin<{ revokedAt: string | null }>('DELETE', `/admin/sidecar-tokens/${tokenId}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.revokedAt).toEqual(expect.any(String));
    expect((await call(gateway.url, 'GET', '/api/v1/bundle', { adminToken: token })).status).toBe(401);
    await waitForHealth(sidecar, (_status, body) => typeof body.lastSyncError === 'string' && body.lastSyncError.includes('401'), 20_000);
    expect((await admin('DELETE', '/admin/sidecar-tokens/sctk_000000000000000000000000')).status).toBe(404);
    await sidecar.stop();
  });
});

describe('errors never echo a credential', () => {
  let sidecar: ServiceProcess;

  beforeAll(async () => {
    sidecar = await startSidecar(path.join(scratch, 'cache-echo'), { BUNDLE_PUBLIC_KEY: publicPem });
    await waitForHealth(sidecar, (status, body) => status === 200 && body.bundleVersion !== null, 20_000);
  });
  afterAll(() => sidecar.stop());

  it.each([
    ['the token itself', () => reader.token],
    ['another agent', () => 'agent_someone_else'],
  ])('a body agentId that is not the token’s agent (%s) is a 403 that does not contain the token', async (_label, agentId) => {
    const answer = await enforce(sidecar, reader, { agentId: agentId() });
    expect(answer.status).toBe(403);
    expect(answer.body.error).toBe('forbidden');
    expect(answer.text).not.toContain(reader.token);
    expect(answer.text).not.toContain(reader.token.split('.')[2]);
  });
});
