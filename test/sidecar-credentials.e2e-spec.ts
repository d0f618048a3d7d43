import { generateKeyPairSync } from 'node:crypto';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import { decisionTokenMiddleware } from '../sdk/typescript/src/index';
import { call, TestResponse } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { eventually, freePort, GATEWAY_MAIN, launch, ServiceProcess, SIDECAR_MAIN, waitFor, HEALTH_TOKEN, waitForHealth } from './support/processes';
import { testDatabaseKind } from './support/test-gateway';

/**
 * The edge sidecar with upstream credentials and decision tokens (docs/security.md "Sidecars"),
 * as users run it: the built gateway and sidecar as processes, a real upstream that requires an
 * API key the agent never holds and checks decision tokens with the TypeScript SDK's Express
 * middleware, which knows only the gateway's JWKS. The credential reaches the sidecar sealed to
 * the sidecar's own key; the sidecar signs its tokens with its own key, certified by the gateway;
 * both keep working while the gateway is down, also across a sidecar restart.
 */

const ADMIN_TOKEN = 'sidecar-credentials-e2e-admin-0123456789';
const PUBLIC_URL = 'http://gateway.sidecar-credentials.test';
const SIDECAR_ID = 'edge-credentials-1';
const secret = (label: string) => `sk_${label}_${randomBytes(18).toString('hex')}`;
const EDGE_KEY = secret('edge');
const ROTATED_KEY = secret('rotated');
const GATEWAY_ONLY_KEY = secret('gatewayonly');
const SECRETS = [EDGE_KEY, ROTATED_KEY, GATEWAY_ONLY_KEY];

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sidecar-credentials-'));
const cacheDir = path.join(scratch, 'cache');
const keyFile = path.join(scratch, 'credentials.key');
fs.writeFileSync(keyFile, randomBytes(32).toString('base64'));

const started: ServiceProcess[] = [];
const seen: string[] = [];
const received: Array<{ url: string; headers: http.IncomingHttpHeaders }> = [];
const accepted = new Map([
  [EDGE_KEY, 'edge'],
  [ROTATED_KEY, 'rotated'],
  [GATEWAY_ONLY_KEY, 'gateway-only'],
]);
let database: OwnDatabase | undefined;
let gateway: ServiceProcess;
let gatewayPort: number;
let sidecar: ServiceProcess;
let sidecarPort: number;
let sidecarToken: string;
let upstream: http.Server;
let upstreamUrl: string;
let agentToken: string;
let edgeCredentialId: string;

async function answer(response: Promise<TestResponse>): Promise<TestResponse> {
  const got = await response;
  seen.push(got.text, JSON.stringify([...got.headers.entries()]));
  return got;
}

const admin = (method: string, route: string, body?: unknown) => answer(call(gateway.url, method, route, { adminToken: ADMIN_TOKEN, body }));
const viaSidecar = (method: string, route: string, body?: string) => answer(call(sidecar.url, method, route, { bearer: agentToken, body, headers: { 'x-api-key': 'sk_guessed' } }));
const direct = (method: string, route: string, headers: Record<string, string> = {}) => answer(call(upstreamUrl, method, route, { headers }));
const lastReceived = () => received[received.length - 1];

function startGateway(): ServiceProcess {
  const service = launch(GATEWAY_MAIN, gatewayPort, {
    ADMIN_TOKEN,
    PUBLIC_URL,
    PDP_GRPC_PORT: '0',
    POLICIES_FILE: '/dev/null',
    SIGNING_KEY_FILE: path.join(scratch, 'signing-key.pem'),
    CREDENTIALS_KEY_FILE: keyFile,
    UPSTREAM_URL: upstreamUrl,
    AUDIT_FLUSH_MS: '10',
    LOG_LEVEL: 'debug',
    LOG_REQUESTS: 'true',
    ...(database ? { DATABASE_URL: database.url } : { DATA_DIR: path.join(scratch, 'data') }),
  });
  started.push(service);
  return service;
}

function startSidecar(): ServiceProcess {
  const service = launch(SIDECAR_MAIN, sidecarPort, {
    METRICS_TOKEN: HEALTH_TOKEN,
    GATEWAY_URL: `http://127.0.0.1:${gatewayPort}`,
    ADMIN_TOKEN: sidecarToken,
    CACHE_DIR: cacheDir,
    UPSTREAM_URL: upstreamUrl,
    BUNDLE_SYNC_INTERVAL: '1',
    AUDIT_FORWARD_INTERVAL_MS: '100',
    SIDECAR_ID,
    LOG_LEVEL: 'debug',
    LOG_REQUESTS: 'true',
  });
  started.push(service);
  return service;
}

/** Waits until the sidecar's grant holds exactly these edge credentials. */
async function sidecarHolds(ids: string[]): Promise<void> {
  await eventually(async () => {
    const health = await answer(call(sidecar.url, 'GET', '/health', { bearer: HEALTH_TOKEN }));
    const grant = health.body.edgeGrant as { credentials: string[]; certificateExpiresAt: string | null } | undefined;
    return grant?.certificateExpiresAt !== null && JSON.stringify(grant?.credentials) === JSON.stringify(ids);
  }, 30_000, `the sidecar holding ${ids.join(', ') || 'no credential'}`);
}

beforeAll(async () => {
  if (testDatabaseKind() === 'postgres') database = await ownDatabase();
  gatewayPort = await freePort();
  sidecarPort = await freePort();
  const app = express();
  app.use((request, _response, next) => {
    received.push({ url: request.originalUrl, headers: request.headers });
    next();
  });
  app.use('/verified', decisionTokenMiddleware({ jwksUrl: `http://127.0.0.1:${gatewayPort}/.well-known/jwks.json`, issuer: PUBLIC_URL }));
  app.all('/verified/*rest', (request, response) => response.json({ ok: true, decision: (request as express.Request & { decision?: unknown }).decision }));
  app.all('/{*rest}', (request, response) => {
    const key = accepted.get(String(request.headers['x-api-key']));
    if (key === undefined) return response.status(401).json({ error: 'bad api key' });
    response.json({ ok: true, key });
  });
  upstream = http.createServer(app);
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

  gateway = startGateway();
  await waitFor(gateway, '/health', (status) => status === 200, 90_000);
  agentToken = (await admin('POST', '/admin/agents', { name: 'edge-payments-bot', trustTier: 'trusted' })).body.token as string;
  const edge = await admin('POST', '/admin/credentials', { route: '/proxy/payments', type: 'header', name: 'X-Api-Key', value: EDGE_KEY, edge: true });
  expect(edge.status).toBe(201);
  edgeCredentialId = edge.body.id as string;
  expect((await admin('POST', '/admin/credentials', { route: '/proxy/gateway-only', type: 'header', name: 'X-Api-Key', value: GATEWAY_ONLY_KEY })).status).toBe(201);
  sidecarToken = (await admin('POST', '/admin/sidecar-tokens', { name: 'edge-1' })).body.token as string;
  sidecar = startSidecar();
  await waitForHealth(sidecar, (status, body) => status === 200 && (body.cachedAgents as number) >= 1, 60_000);
  await sidecarHolds([edgeCredentialId]);
}, 240_000);

afterAll(async () => {
  for (const service of started) await service.kill();
  await new Promise((resolve) => upstream?.close(resolve));
  await database?.dispose();
  fs.rmSync(scratch, { recursive: true, force: true });
}, 60_000);

describe('edge credentials', () => {
  it('are injected by the sidecar after an allow, replacing the agent’s guess; only those marked for the edge', async () => {
    expect((await direct('GET', '/payments/invoices', { 'x-api-key': 'sk_guessed' })).status).toBe(401);
    const through = await viaSidecar('GET', '/proxy/payments/invoices');
    expect(through.status).toBe(200);
    expect(through.body).toEqual({ ok: true, key: 'edge' });
    expect(lastReceived().headers['x-api-key']).toBe(EDGE_KEY);
    // The gateway injects its own credential; the sidecar was never given it.
    expect((await viaSidecar('GET', '/proxy/gateway-only/x')).status).toBe(401);
    expect((await answer(call(gateway.url, 'GET', '/proxy/gateway-only/x', { bearer: agentToken }))).body).toEqual({ ok: true, key: 'gateway-only' });
  });

  it('reach the sidecar sealed: neither the bundle nor anything in CACHE_DIR holds a value', async () => {
    const bundle = await answer(call(gateway.url, 'GET', '/api/v1/bundle', { adminToken: sidecarToken }));
    expect(bundle.status).toBe(200);
    expect(bundle.body.edgeCredentials).toEqual([{ id: edgeCredentialId, version: 1 }]);
    const files = fs.readdirSync(cacheDir);
    expect(files).toEqual(expect.arrayContaining(['edge-grant.json', 'sidecar-keys.json']));
    for (const file of files) {
      const bytes = fs.readFileSync(path.join(cacheDir, file));
      for (const value of SECRETS) expect({ file, holds: bytes.includes(Buffer.from(value)) }).toEqual({ file, holds: false });
    }
    expect(fs.statSync(path.join(cacheDir, 'sidecar-keys.json')).mode & 0o077).toBe(0);
  });

  it('are granted to the sidecar token’s own keys only: a copied token with other keys, or an admin token, gets nothing', async () => {
    const jwk = (type: 'ed25519' | 'x25519') => generateKeyPairSync(type as 'ed25519').publicKey.export({ format: 'jwk' });
    const otherKeys = { sidecarId: 'thief', signingKey: jwk('ed25519'), sealingKey: jwk('x25519') };
    const copied = await answer(call(gateway.url, 'POST', '/api/v1/sidecar/grant', { adminToken: sidecarToken, body: otherKeys }));
    expect(copied.status).toBe(409);
    expect(copied.body.message).toMatch(/bound to the keys of sidecar edge-credentials-1/);
    const byAdmin = await admin('POST', '/api/v1/sidecar/grant', otherKeys);
    expect(byAdmin.status).toBe(403);
    expect(byAdmin.body.message).toMatch(/sidecar token only/);
    const bad = await answer(call(gateway.url, 'POST', '/api/v1/sidecar/grant', { adminToken: sidecarToken, body: { ...otherKeys, sealingKey: { kty: 'OKP', crv: 'X25519', x: 'short', d: 'secret' } } }));
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/sealingKey: a private key/);
  });

  it('follow a rotation at the gateway at the next bundle sync, losing no request meanwhile', async () => {
    const rotated = await admin('POST', `/admin/credentials/${edgeCredentialId}/rotate`, { value: ROTATED_KEY });
    expect(rotated.status).toBe(200);
    const keys: unknown[] = [];
    await eventually(async () => {
      const got = await viaSidecar('GET', '/proxy/payments/invoices');
      keys.push(got.body.key);
      return got.body.key === 'rotated';
    }, 30_000, 'the sidecar forwarding the rotated key');
    // Every request carried a key: the previous one until the new grant came, then the new one.
    expect(keys.filter((key) => key !== 'edge' && key !== 'rotated')).toEqual([]);
    expect(lastReceived().headers['x-api-key']).toBe(ROTATED_KEY);
  });
});

describe('the sidecar’s decision tokens', () => {
  it('are accepted by the SDK middleware from the gateway’s JWKS alone, naming the sidecar; a direct call is refused', async () => {
    const through = await viaSidecar('POST', '/proxy/verified/orders', '{"item":"paper"}');
    expect(through.status).toBe(200);
    expect(through.body.decision).toMatchObject({ action: 'write:verified/orders', sidecarId: SIDECAR_ID, decisionId: expect.stringMatching(/^aud_/) });
    expect((await direct('POST', '/verified/orders')).body).toMatchObject({ problem: 'missing' });
  });

  it('bind the request: replayed for another path, it is refused', async () => {
    expect((await viaSidecar('GET', '/proxy/verified/orders/1')).status).toBe(200);
    const token = lastReceived().headers['x-service-decision-token'] as string;
    expect((await direct('GET', '/verified/orders/2', { 'x-service-decision-token': token })).body).toMatchObject({ problem: 'wrong_request' });
  });
});

describe('audit', () => {
  it('records every grant at the gateway, and the sidecar’s decisions name the credential they carried', async () => {
    let entries: Array<{ action: string; source: string; path: string | null; status: number | null; details: Record<string, unknown> | null }> = [];
    const edgePayments = () => entries.filter((entry) => entry.source === 'sidecar' && entry.path === '/payments/invoices' && entry.status === 200);
    await eventually(async () => {
      entries = (await admin('GET', '/admin/audit?limit=1000')).body.entries as typeof entries;
      return edgePayments().length >= 2;
    }, 30_000, 'the sidecar’s entries of /payments/invoices');
    const grants = entries.filter((entry) => entry.action === 'admin:sidecar.grant');
    expect(grants.length).toBeGreaterThanOrEqual(2);
    expect(grants[0].details).toMatchObject({ sidecarId: SIDECAR_ID, credentials: [{ id: edgeCredentialId, version: 2 }] });
    expect(entries.find((entry) => entry.action === 'admin:sidecar.grant-refused')?.details).toMatchObject({ sidecarId: 'thief' });
    for (const entry of edgePayments()) expect(entry.details).toMatchObject({ credentialId: edgeCredentialId });
  });
});

describe('with the gateway down', () => {
  it('keeps injecting and signing tokens the upstream accepts, also after the sidecar restarts from its cache', async () => {
    await gateway.stop();
    await eventually(async () => (await answer(call(sidecar.url, 'GET', '/health', { bearer: HEALTH_TOKEN }))).body.gatewayReachable === false, 30_000, 'the sidecar seeing the gateway gone');
    expect((await viaSidecar('GET', '/proxy/payments/invoices')).body).toEqual({ ok: true, key: 'rotated' });
    expect((await viaSidecar('GET', '/proxy/verified/orders/9')).body.decision).toMatchObject({ sidecarId: SIDECAR_ID });
    await sidecar.stop();
    sidecar = startSidecar();
    await waitForHealth(sidecar, (status, body) => status === 200 && (body.edgeGrant as { credentials: string[] }).credentials.length === 1, 60_000);
    expect((await viaSidecar('GET', '/proxy/payments/invoices')).body).toEqual({ ok: true, key: 'rotated' });
    expect((await viaSidecar('GET', '/proxy/verified/orders/10')).body.decision).toMatchObject({ sidecarId: SIDECAR_ID });
  }, 120_000);

  it('stops injecting a revoked credential once the gateway is back and the bundle no longer names it', async () => {
    gateway = startGateway();
    await waitFor(gateway, '/health', (status) => status === 200, 90_000);
    expect((await admin('DELETE', `/admin/credentials/${edgeCredentialId}`)).status).toBe(200);
    await sidecarHolds([]);
    expect((await viaSidecar('GET', '/proxy/payments/invoices')).status).toBe(401);
  }, 150_000);
});

describe('the secrets', () => {
  it('appear in no answer, log line, health report or audit entry', async () => {
    await answer(call(sidecar.url, 'GET', '/health', { bearer: HEALTH_TOKEN }));
    await admin('GET', '/admin/audit?limit=1000');
    const outputs = started.map((service) => service.output().stdout + service.output().stderr);
    expect(outputs.join('').length).toBeGreaterThan(1000);
    for (const value of SECRETS) for (const text of [...seen, ...outputs]) expect(text.includes(value)).toBe(false);
  });
});
