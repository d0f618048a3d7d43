import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { generateKeyPairSync, KeyObject } from 'node:crypto';
import { JWK, SignJWT } from 'jose';
import { BUNDLE_FORMAT, BundleContent, signBundle, SignedBundle } from '../src/core/edge-protocol/bundle-format';
import { call } from './support/http-client';
import { eventually, freePort, launch, ServiceProcess, SIDECAR_MAIN, HEALTH_TOKEN, waitForHealth } from './support/processes';

/**
 * What the sidecar accepts as a bundle, against a small stand-in gateway that serves whatever
 * the test hands it: tampered, unsigned, older and foreign-signed bundles are refused and the
 * bundle in force stays; with no valid bundle the sidecar fails closed; in MODE=audit nothing is
 * denied. The sidecar is the built one, run as a process.
 */

const ORG = 'org_fake';
const ISSUER = 'http://fake-gateway.test';
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sidecar-bundles-'));
const gatewayKey = generateKeyPairSync('ed25519');
const otherKey = generateKeyPairSync('ed25519');
const publicJwk: JWK = { ...(gatewayKey.publicKey.export({ format: 'jwk' }) as JWK), kid: 'fake-key', alg: 'EdDSA', use: 'sig' };

/** The stand-in gateway: serves `bundle` (or a 503 when null) and keeps what is ingested. */
class FakeGateway {
  bundle: unknown = null;
  readonly ingested: Array<Record<string, unknown>> = [];
  /** Ingest bodies larger than this are answered 413, as a gateway with a small MAX_JSON_BYTES does. */
  maxIngestBytes = Infinity;
  refusedAsTooLarge = 0;
  /** Answer bundle fetches with a body that never ends (no content-length), as a wrong GATEWAY_URL might. */
  endlessBundle = false;
  private server!: http.Server;
  url = '';

  async start(): Promise<void> {
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        if (request.url === '/api/v1/bundle') {
          if (this.endlessBundle) return streamEndlessly(response);
          if (this.bundle === null) return send(response, 503, { error: 'service_unavailable' });
          return send(response, 200, this.bundle);
        }
        if (request.url === '/api/v1/audit/ingest') {
          if (Buffer.concat(chunks).length > this.maxIngestBytes) {
            this.refusedAsTooLarge++;
            return send(response, 413, { error: 'payload_too_large' });
          }
          const body = JSON.parse(Buffer.concat(chunks).toString()) as { entries: Array<Record<string, unknown>> };
          this.ingested.push(...body.entries);
          return send(response, 200, { accepted: body.entries.length, duplicates: 0, lastSeq: body.entries.at(-1)?.seq ?? 0 });
        }
        send(response, 404, { error: 'not_found' });
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function send(response: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/** 1 MiB chunks of a JSON string for as long as the client reads. */
function streamEndlessly(response: http.ServerResponse): void {
  const chunk = Buffer.alloc(1024 * 1024, 'a');
  response.writeHead(200, { 'content-type': 'application/json' });
  response.write('"');
  const more = (): void => {
    while (!response.destroyed && response.write(chunk));
    if (!response.destroyed) response.once('drain', more);
  };
  response.on('close', () => response.removeAllListeners('drain'));
  more();
}

function content(version: string, overrides: Partial<BundleContent> = {}): BundleContent {
  return {
    format: BUNDLE_FORMAT,
    orgId: ORG,
    version,
    policyVersion: 1,
    policies: [{ name: 'no-etc', match: { action: 'read:*' }, rules: [{ name: 'etc', condition: 'args.path starts_with "/etc"', action: 'deny', reason: 'No system files' }] }],
    tiers: { order: ['unverified', 'verified', 'trusted', 'privileged'], aliases: {} },
    agents: [{ id: 'agent_edge1', name: 'edge-one', trustTier: 'verified', tags: [], revoked: false }],
    revoked: [],
    keys: [publicJwk],
    tokenIssuer: ISSUER,
    gatewayMode: 'enforce',
    ...overrides,
  };
}

function signed(version: string, overrides: Partial<BundleContent> = {}, key: KeyObject = gatewayKey.privateKey): SignedBundle {
  return signBundle(content(version, overrides), { privateKey: key, kid: 'fake-key', alg: 'EdDSA' });
}

const V1 = '2026-11-24T08:00:00.000Z';
const V2 = '2026-11-24T09:00:00.000Z';
const V0 = '2026-11-23T08:00:00.000Z';

let token: string;
const processes: ServiceProcess[] = [];

async function startSidecar(gateway: FakeGateway, cacheDir: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const sidecar = launch(SIDECAR_MAIN, await freePort(), {
    METRICS_TOKEN: HEALTH_TOKEN,
    GATEWAY_URL: gateway.url,
    ADMIN_TOKEN: 'fake-admin-token',
    CACHE_DIR: cacheDir,
    BUNDLE_SYNC_INTERVAL: '1',
    AUDIT_FORWARD_INTERVAL_MS: '100',
    BUNDLE_PUBLIC_KEY: JSON.stringify(publicJwk),
    LOG_LEVEL: 'warn',
    ...env,
  });
  processes.push(sidecar);
  await waitForHealth(sidecar, (status) => status === 200 || status === 503);
  return sidecar;
}

const enforce = (sidecar: ServiceProcess, body: Record<string, unknown>) => call(sidecar.url, 'POST', '/enforce', { bearer: token, body: { agentId: 'agent_edge1', ...body } });

beforeAll(async () => {
  token = await new SignJWT({ name: 'edge-one', tier: 'verified', tags: [], org: ORG })
    .setProtectedHeader({ alg: 'EdDSA', kid: 'fake-key' })
    .setSubject('agent_edge1')
    .setIssuer(ISSUER)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(gatewayKey.privateKey);
});

afterAll(async () => {
  for (const sidecar of processes) await sidecar.kill();
  fs.rmSync(scratch, { recursive: true, force: true });
});

describe('bundles a sidecar accepts', () => {
  const gateway = new FakeGateway();
  const cacheDir = path.join(scratch, 'cache-a');
  let sidecar: ServiceProcess;

  beforeAll(() => gateway.start());
  afterAll(() => gateway.close());

  it('fails closed, saying why, while the only bundle it has seen is tampered', async () => {
    const tampered = signed(V1);
    tampered.agents[0].trustTier = 'privileged';
    gateway.bundle = tampered;
    sidecar = await startSidecar(gateway, cacheDir);
    const health = await waitForHealth(sidecar, (_status, body) => body.lastSync !== null && body.lastSync !== undefined);
    expect(health).toMatchObject({ status: 'fail_closed', bundleVersion: null, cachedPolicies: 0 });
    expect(health.failClosedReason).toMatch(/signature does not verify/);
    const refused = await enforce(sidecar, { action: 'read:docs/a' });
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ error: 'service_unavailable', decision: 'deny' });
    expect((await call(sidecar.url, 'GET', '/health', { bearer: HEALTH_TOKEN })).status).toBe(503);
  });

  it('applies a valid bundle at the next sync and decides with it', async () => {
    gateway.bundle = signed(V1);
    await waitForHealth(sidecar, (status, body) => status === 200 && body.bundleVersion === V1, 20_000);
    expect((await enforce(sidecar, { action: 'read:docs/a', context: { args: { path: '/docs/a' } } })).body).toMatchObject({ decision: 'allow', bundleVersion: V1 });
    expect((await enforce(sidecar, { action: 'read:etc/passwd', context: { args: { path: '/etc/passwd' } } })).body).toMatchObject({ decision: 'deny', policy: 'no-etc', reason: 'No system files' });
  });

  it.each([
    ['tampered', () => Object.assign(signed(V2), { policies: [] }), /signature does not verify/],
    ['unsigned', () => content(V2), /unsigned/],
    ['older', () => signed(V0), /older/],
    ['signed with another key', () => signed(V2, {}, otherKey.privateKey), /signature does not verify/],
  ] as const)('refuses a %s bundle and keeps the one in force', async (_label, make, reason) => {
    gateway.bundle = make();
    const health = await waitForHealth(sidecar, (_status, body) => typeof body.lastSyncError === 'string' && reason.test(body.lastSyncError), 20_000);
    expect(health).toMatchObject({ status: 'healthy', bundleVersion: V1, lastSyncSuccess: false, gatewayReachable: true });
    expect((await enforce(sidecar, { action: 'read:etc/passwd', context: { args: { path: '/etc/passwd' } } })).body).toMatchObject({ decision: 'deny', bundleVersion: V1 });
  });

  it('stops reading a bundle answer past 64 MiB, says so, and keeps deciding with the bundle in force', async () => {
    gateway.endlessBundle = true;
    try {
      const health = await waitForHealth(sidecar, (_status, body) => typeof body.lastSyncError === 'string' && /larger than 64 MiB/.test(body.lastSyncError), 20_000);
      expect(health).toMatchObject({ status: 'healthy', bundleVersion: V1, lastSyncSuccess: false });
      expect((await enforce(sidecar, { action: 'read:docs/a', context: { args: { path: '/docs/a' } } })).body).toMatchObject({ decision: 'allow', bundleVersion: V1 });
    } finally {
      gateway.endlessBundle = false;
    }
  });

  it('applies a newer bundle that revokes the agent', async () => {
    gateway.bundle = signed(V2, { agents: [{ id: 'agent_edge1', name: 'edge-one', trustTier: 'verified', tags: [], revoked: true }], revoked: ['agent_edge1'] });
    await waitForHealth(sidecar, (_status, body) => body.bundleVersion === V2, 20_000);
    const refused = await enforce(sidecar, { action: 'read:docs/a' });
    expect(refused.status).toBe(401);
    expect(refused.body.message).toBe('Agent has been revoked');
  });

  it('discards a cached bundle of another organization once the gateway serves the one of ADMIN_TOKEN, even an older version', async () => {
    const cacheDir = path.join(scratch, 'cache-org-switch');
    const other = new FakeGateway();
    await other.start();
    other.bundle = signed(V2);
    const first = await startSidecar(other, cacheDir);
    await waitForHealth(first, (_status, body) => body.bundleVersion === V2, 20_000);
    await first.stop();
    other.bundle = signed(V0, { orgId: 'org_switched', agents: [{ id: 'agent_switched', name: 'switched', trustTier: 'verified', tags: [], revoked: false }] });
    const restarted = await startSidecar(other, cacheDir);
    const health = await waitForHealth(restarted, (_status, body) => body.bundleVersion === V0, 20_000);
    expect(health).toMatchObject({ status: 'healthy', lastSyncSuccess: true, lastSyncError: null });
    // The token of the cached organization's agent no longer passes.
    expect((await enforce(restarted, { action: 'read:docs/a' })).status).toBe(401);
    expect(restarted.output().stdout + restarted.output().stderr).toContain('discarded the cached bundle');
    await restarted.stop();
    await other.close();
  });

  it('refuses a cached bundle that was changed on disk, and fails closed while the gateway is away', async () => {
    await sidecar.stop();
    const file = path.join(cacheDir, 'bundle.json');
    const cached = JSON.parse(fs.readFileSync(file, 'utf8')) as { bundle: SignedBundle };
    cached.bundle.revoked = [];
    cached.bundle.agents[0].revoked = false;
    fs.writeFileSync(file, JSON.stringify(cached));
    gateway.bundle = null;
    sidecar = await startSidecar(gateway, cacheDir);
    const health = await waitForHealth(sidecar, (_status, body) => body.lastSync !== null);
    expect(health).toMatchObject({ status: 'fail_closed', bundleVersion: null });
    expect(health.failClosedReason).toMatch(/cached bundle refused: signature does not verify/);
  });
});

describe('a gateway of several instances, each signing with its own key', () => {
  const gateway = new FakeGateway();
  const cacheDir = path.join(scratch, 'cache-instances');
  const secondKey = generateKeyPairSync('ed25519');
  const secondJwk: JWK = { ...(secondKey.publicKey.export({ format: 'jwk' }) as JWK), kid: 'second-key', alg: 'EdDSA', use: 'sig' };
  /** Every instance's bundle lists every instance's key, as the gateway's key ring publishes them. */
  const bothKeys = { keys: [publicJwk, secondJwk] };
  const bySecond = (version: string, overrides: Partial<BundleContent> = {}, key: KeyObject = secondKey.privateKey) =>
    signBundle(content(version, { ...bothKeys, ...overrides }), { privateKey: key, kid: 'second-key', alg: 'EdDSA' });

  beforeAll(() => gateway.start());
  afterAll(() => gateway.close());

  it('applies the bundles of an instance whose key a bundle of the pinned key lists, also from its cache, and no others', async () => {
    gateway.bundle = signed(V1, bothKeys);
    const sidecar = await startSidecar(gateway, cacheDir);
    await waitForHealth(sidecar, (_status, body) => body.bundleVersion === V1, 20_000);
    gateway.bundle = bySecond(V2, {}, otherKey.privateKey);
    await waitForHealth(sidecar, (_status, body) => typeof body.lastSyncError === 'string' && /signature does not verify/.test(body.lastSyncError), 20_000);

    gateway.bundle = bySecond(V2, { agents: [{ id: 'agent_edge1', name: 'edge-one', trustTier: 'verified', tags: [], revoked: true }], revoked: ['agent_edge1'] });
    await waitForHealth(sidecar, (_status, body) => body.bundleVersion === V2, 20_000);
    expect((await enforce(sidecar, { action: 'read:docs/a' })).body.message).toBe('Agent has been revoked');

    await sidecar.stop();
    gateway.bundle = null;
    const restarted = await startSidecar(gateway, cacheDir);
    const health = await waitForHealth(restarted, (_status, body) => body.lastSync !== null);
    expect(health).toMatchObject({ status: 'healthy', bundleVersion: V2 });
    await restarted.stop();
  });
});

describe('a damaged CACHE_DIR or configuration at start', () => {
  const gateway = new FakeGateway();

  beforeAll(() => gateway.start());
  afterAll(() => gateway.close());

  /** A fresh CACHE_DIR holding `files`. */
  function cacheWith(name: string, files: Record<string, string>): string {
    const dir = path.join(scratch, `cache-start-${name}`);
    fs.mkdirSync(dir, { recursive: true });
    for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, file), text);
    return dir;
  }

  async function exitOf(cacheDir: string, env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> {
    const sidecar = launch(SIDECAR_MAIN, await freePort(), {
      METRICS_TOKEN: HEALTH_TOKEN,
      GATEWAY_URL: gateway.url,
      ADMIN_TOKEN: 'fake-admin-token',
      CACHE_DIR: cacheDir,
      BUNDLE_PUBLIC_KEY: JSON.stringify(publicJwk),
      LOG_LEVEL: 'warn',
      ...env,
    });
    processes.push(sidecar);
    const exit = await sidecar.exit;
    return { code: exit.code, stderr: sidecar.output().stderr };
  }

  it('fails closed, saying why, on a bundle.json holding null', async () => {
    gateway.bundle = null;
    const sidecar = await startSidecar(gateway, cacheWith('null-bundle', { 'bundle.json': 'null\n' }));
    const health = await waitForHealth(sidecar, (_status, body) => body.lastSync !== null);
    expect(health).toMatchObject({ status: 'fail_closed', bundleVersion: null });
    expect(health.failClosedReason).toMatch(/cached bundle refused: cached bundle is not a JSON object/);
    await sidecar.stop();
  });

  it.each([
    ['sidecar-id', 'edge 1'],
    ['sidecar-id', 'sc_\u00e9'],
    ['sidecar-id', 'a'.repeat(300)],
    ['audit.acked', 'garbage\n'],
    ['audit.seq', 'Infinity\n'],
  ])('refuses to start, naming %s, when it holds %j', async (file, text) => {
    const cacheDir = cacheWith(`${file}-${text.length}`, { [file]: text });
    const { code, stderr } = await exitOf(cacheDir);
    expect(code).toBe(1);
    expect(stderr).toContain(path.join(cacheDir, file));
  });

  it('refuses a GATEWAY_URL with a user name or password, without printing them', async () => {
    const { code, stderr } = await exitOf(cacheWith('credentials', {}), { GATEWAY_URL: gateway.url.replace('http://', 'http://edge:s3cret-pw@') });
    expect(code).toBe(1);
    expect(stderr).toContain('GATEWAY_URL must not carry a user name or password');
    expect(stderr).not.toContain('s3cret-pw');
  });
});

describe('MODE=audit', () => {
  const gateway = new FakeGateway();
  let sidecar: ServiceProcess;

  beforeAll(async () => {
    await gateway.start();
    gateway.bundle = signed(V1);
    sidecar = await startSidecar(gateway, path.join(scratch, 'cache-audit'), { MODE: 'audit' });
    await waitForHealth(sidecar, (status) => status === 200, 20_000);
  });
  afterAll(() => gateway.close());

  it('allows a would-be denial, says so, and forwards it as a denial that was not enforced', async () => {
    const answer = await enforce(sidecar, { action: 'read:etc/passwd', context: { args: { path: '/etc/passwd' } } });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ decision: 'allow', wouldDeny: true, policy: 'no-etc', reason: 'No system files', mode: 'audit' });
    await eventually(async () => gateway.ingested.some((entry) => entry.action === 'read:etc/passwd'), 20_000, 'forwarded');
    expect(gateway.ingested.find((entry) => entry.action === 'read:etc/passwd')).toMatchObject({ seq: 1, decision: 'deny', enforced: false, policyName: 'no-etc', agentId: 'agent_edge1' });
  });
});

describe('a gateway that takes only small request bodies', () => {
  const gateway = new FakeGateway();
  let sidecar: ServiceProcess;

  beforeAll(async () => {
    await gateway.start();
    gateway.bundle = signed(V1);
    gateway.maxIngestBytes = 8 * 1024;
    sidecar = await startSidecar(gateway, path.join(scratch, 'cache-small-bodies'));
    await waitForHealth(sidecar, (status) => status === 200, 20_000);
  });
  afterAll(() => gateway.close());

  it('gets every entry across in smaller batches after a 413', async () => {
    // One turn's hundred entries make a first batch of tens of KB.
    const actions = Array.from({ length: 100 }, (_, index) => ({ action: `read:docs/${index}`, resource: `docs/${index}` }));
    const answer = await call(sidecar.url, 'POST', '/enforce/batch', { bearer: token, body: { agentId: 'agent_edge1', actions } });
    expect(answer.status).toBe(200);
    await eventually(async () => gateway.ingested.length >= 100, 20_000, 'every entry forwarded');
    expect(gateway.refusedAsTooLarge).toBeGreaterThan(0);
    expect(gateway.ingested.map((entry) => entry.seq)).toEqual(Array.from({ length: 100 }, (_, index) => index + 1));
    // The fake gateway counts a batch before the sidecar has read its answer: the last batch is
    // acknowledged a moment after it arrived.
    const audit = async () => (await call<{ audit: { pendingEntries: number; dropped: number } }>(sidecar.url, 'GET', '/health', { bearer: HEALTH_TOKEN })).body.audit;
    await eventually(async () => (await audit()).pendingEntries === 0, 5_000, 'the last batch acknowledged');
    expect(await audit()).toMatchObject({ pendingEntries: 0, dropped: 0 });
  });
});
