import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import express from 'express';
import { Client } from 'pg';
import { decisionTokenMiddleware } from '../sdk/typescript/src/index';
import { credentialKeyId } from '../src/core/config/credential-keys';
import { call, TestResponse } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { eventually, freePort, GATEWAY_MAIN, launch, ServiceProcess, waitFor } from './support/processes';

/**
 * Upstream credentials and decision tokens as users run them (docs/security.md): the built
 * gateway as a process in front of a real upstream that requires an API key the agent never
 * holds, and that checks decision tokens with the TypeScript SDK's Express middleware.
 */

const ADMIN_TOKEN = 'upstream-credentials-e2e-admin-0123456789';
const METRICS_TOKEN = 'upstream-credentials-e2e-metrics-0123456789';
const PUBLIC_URL = 'http://gateway.credentials.test';
const secret = (label: string) => `sk_${label}_${randomBytes(18).toString('hex')}`;
const PAYMENTS_KEY = secret('payments');
const ROTATED_KEY = secret('rotated');
const SEARCH_KEY = secret('search');
const BEARER_KEY = secret('bearer');
const SECRETS = [PAYMENTS_KEY, ROTATED_KEY, SEARCH_KEY, BEARER_KEY];

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-credentials-'));
const keyFile = path.join(scratch, 'credentials.key');
const newKeyFile = path.join(scratch, 'credentials-new.key');
const wrongKeyFile = path.join(scratch, 'credentials-wrong.key');
fs.writeFileSync(keyFile, randomBytes(32).toString('base64'));
fs.writeFileSync(newKeyFile, randomBytes(32).toString('hex'));
fs.writeFileSync(wrongKeyFile, randomBytes(32).toString('base64'));

/** Every answer any test got, and every process's output: the secrets must be in none. */
const seen: string[] = [];
const processes: ServiceProcess[] = [];
let database: OwnDatabase;
let gateway: ServiceProcess;
let upstream: http.Server;
let upstreamUrl: string;
let agentToken: string;
let gatewayPort: number;

/** What the upstream accepts as the payments key; both during a rotation. */
const acceptedPaymentKeys = new Set([PAYMENTS_KEY]);
const received: Array<{ url: string; headers: http.IncomingHttpHeaders; body: string }> = [];

async function answer(response: Promise<TestResponse>): Promise<TestResponse> {
  const got = await response;
  seen.push(got.text, JSON.stringify([...got.headers.entries()]));
  return got;
}

function admin(method: string, route: string, body?: unknown): Promise<TestResponse> {
  return answer(call(gateway.url, method, route, { adminToken: ADMIN_TOKEN, body }));
}

function proxied(method: string, route: string, options: { headers?: Record<string, string>; body?: string; followRedirects?: boolean } = {}): Promise<TestResponse> {
  return answer(call(gateway.url, method, route, { bearer: agentToken, ...options }));
}

function direct(method: string, route: string, options: { headers?: Record<string, string>; body?: string } = {}): Promise<TestResponse> {
  return answer(call(upstreamUrl, method, route, options));
}

/** The upstream: keys checked by route, decision tokens by the SDK's middleware under /verified and /later. */
async function startUpstream(gatewayUrl: string): Promise<void> {
  const app = express();
  app.use((request, _response, next) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ url: request.originalUrl, headers: request.headers, body: Buffer.concat(chunks).toString() });
      (request as express.Request & { rawBody?: Buffer }).rawBody = Buffer.concat(chunks);
      next();
    });
  });
  const jwksUrl = `${gatewayUrl}/.well-known/jwks.json`;
  app.use('/verified', decisionTokenMiddleware({ jwksUrl, issuer: PUBLIC_URL }));
  // A verifier whose clock is two minutes ahead: every token it sees has expired.
  app.use('/later', decisionTokenMiddleware({ jwksUrl, issuer: PUBLIC_URL, clock: () => Date.now() + 120_000 }));
  const decided = (request: express.Request, response: express.Response) => response.json({ ok: true, decision: (request as express.Request & { decision?: unknown }).decision });
  app.all('/verified/*rest', decided);
  app.all('/later/*rest', decided);
  app.all('/payments/*rest', (request, response) => {
    const key = request.headers['x-api-key'];
    if (typeof key !== 'string' || !acceptedPaymentKeys.has(key)) return response.status(401).json({ error: 'bad api key' });
    response.json({ ok: true, key: key === PAYMENTS_KEY ? 'first' : 'rotated' });
  });
  app.all('/search', (request, response) => {
    const url = new URL(request.originalUrl, 'http://upstream');
    if (url.searchParams.getAll('api_key').join() !== SEARCH_KEY) return response.status(401).json({ error: 'bad api key' });
    response.json({ ok: true, q: url.searchParams.get('q') });
  });
  // An upstream that redirects to its own URL, echoing the query it was sent (the injected key with it), or naming the key elsewhere.
  app.all('/search/moved', (request, response) => {
    const url = new URL(request.originalUrl, 'http://upstream');
    response.redirect(302, `/search?${url.searchParams.toString()}`);
  });
  app.all('/search/elsewhere', (request, response) => {
    const url = new URL(request.originalUrl, 'http://upstream');
    response.redirect(307, `/login?next=${encodeURIComponent(`/search?key=${url.searchParams.get('api_key') ?? ''}`)}`);
  });
  app.all('/bearer/*rest', (request, response) => {
    if (request.headers.authorization !== `Bearer ${BEARER_KEY}`) return response.status(401).json({ error: 'bad token' });
    response.json({ ok: true });
  });
  upstream = http.createServer(app);
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
}

function startGateway(env: Record<string, string>): ServiceProcess {
  const service = launch(GATEWAY_MAIN, gatewayPort, {
    DATABASE_URL: database.url,
    ADMIN_TOKEN,
    PUBLIC_URL,
    PDP_GRPC_PORT: '0',
    POLICIES_FILE: '/dev/null',
    SIGNING_KEY_FILE: path.join(scratch, 'signing-key.pem'),
    UPSTREAM_URL: upstreamUrl,
    AUDIT_FLUSH_MS: '10',
    LOG_LEVEL: 'debug',
    LOG_REQUESTS: 'true',
    METRICS_TOKEN,
    ...env,
  });
  processes.push(service);
  return service;
}

beforeAll(async () => {
  database = await ownDatabase();
  gatewayPort = await freePort();
  await startUpstream(`http://127.0.0.1:${gatewayPort}`);
  gateway = startGateway({ CREDENTIALS_KEY_FILE: keyFile });
  await waitFor(gateway, '/health', (status) => status === 200);
  const agent = await admin('POST', '/admin/agents', { name: 'payments-bot', trustTier: 'trusted' });
  agentToken = agent.body.token as string;
}, 120_000);

afterAll(async () => {
  for (const service of processes) await service.kill();
  await new Promise((resolve) => upstream?.close(resolve));
  await database?.dispose();
  fs.rmSync(scratch, { recursive: true, force: true });
});

describe('upstream credentials', () => {
  let paymentsId: string;

  it('stores a credential for a route, answering everything but its value', async () => {
    const created = await admin('POST', '/admin/credentials', { route: '/proxy/payments', type: 'header', name: 'X-Api-Key', value: PAYMENTS_KEY });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ route: '/proxy/payments', mcpServer: null, type: 'header', name: 'X-Api-Key', edge: false, version: 1, revokedAt: null });
    paymentsId = created.body.id as string;
    expect(paymentsId).toMatch(/^cred_/);
    const listed = await admin('GET', '/admin/credentials');
    expect(listed.body.credentials).toEqual([expect.objectContaining({ id: paymentsId })]);
    expect((await admin('POST', '/admin/credentials', { route: '/proxy/search', type: 'query', name: 'api_key', value: SEARCH_KEY })).status).toBe(201);
    expect((await admin('POST', '/admin/credentials', { route: '/proxy/bearer', type: 'bearer', value: BEARER_KEY })).status).toBe(201);
  });

  it('is sealed at rest: the stored row holds no byte of the value', async () => {
    const client = new Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ sealed: Buffer; key_id: string }>('SELECT sealed, key_id FROM upstream_credentials WHERE id = $1', [paymentsId]);
      expect(rows[0].sealed.length).toBeGreaterThan(PAYMENTS_KEY.length);
      expect(rows[0].sealed.includes(Buffer.from(PAYMENTS_KEY))).toBe(false);
    } finally {
      await client.end();
    }
  });

  it('refuses a credential for a route or MCP server that does not exist, 400 naming it', async () => {
    const cases = [
      { body: { mcpServer: 'no-such-server', type: 'bearer', value: 'x' }, message: /no-such-server/ },
      { body: { route: '/elsewhere', type: 'bearer', value: 'x' }, message: /\/proxy/ },
      { body: { route: '/proxy/../admin', type: 'bearer', value: 'x' }, message: /climb/ },
      { body: { route: '/proxy/payments', mcpServer: 'x', type: 'bearer', value: 'x' }, message: /exactly one/ },
      { body: { route: '/proxy/x', type: 'header', name: 'Host', value: 'x' }, message: /sets itself/ },
      { body: { route: '/proxy/x', type: 'header', name: 'X-Key', value: 'a\r\nX-Evil: 1' }, message: /visible ASCII/ },
    ];
    for (const { body, message } of cases) {
      const refused = await admin('POST', '/admin/credentials', body);
      expect(refused.status).toBe(400);
      expect(refused.body.message).toMatch(message);
    }
    expect((await admin('POST', '/admin/credentials', { route: '/proxy/payments', type: 'bearer', value: 'x' })).status).toBe(409);
  });

  it('lets the agent’s own guess fail directly, and the governed call through with the stored key', async () => {
    const guessed = await direct('GET', '/payments/invoices', { headers: { 'x-api-key': 'sk_guessed' } });
    expect(guessed.status).toBe(401);
    const through = await proxied('GET', '/proxy/payments/invoices', { headers: { 'x-api-key': 'sk_guessed' } });
    expect(through.status).toBe(200);
    expect(through.body).toEqual({ ok: true, key: 'first' });
    const last = received[received.length - 1];
    expect(last.headers['x-api-key']).toBe(PAYMENTS_KEY);
    expect(last.headers.authorization).toBeUndefined();
  });

  it('puts a query credential in the query, replacing the agent’s, and a bearer one in Authorization', async () => {
    const searched = await proxied('GET', '/proxy/search?q=paper&api_key=sk_guessed&%61pi_key=sk_other');
    expect(searched.status).toBe(200);
    expect(searched.body).toEqual({ ok: true, q: 'paper' });
    const bearer = await proxied('POST', '/proxy/bearer/charge', { body: '{"amount":3}', headers: { 'content-type': 'application/json' } });
    expect(bearer.status).toBe(200);
    expect((await direct('POST', '/bearer/charge', { headers: { authorization: 'Bearer sk_guessed' } })).status).toBe(401);
  });

  it('never hands the injected query credential back in a redirect’s Location', async () => {
    const moved = await proxied('GET', '/proxy/search/moved?q=paper&api_key=sk_guessed', { followRedirects: false });
    expect(moved.status).toBe(302);
    expect(received[received.length - 1].url).toContain(`api_key=${SEARCH_KEY}`);
    expect(moved.headers.get('location')).toBe('/search?q=paper');
    const elsewhere = await proxied('GET', '/proxy/search/elsewhere?q=paper', { followRedirects: false });
    expect(elsewhere.status).toBe(307);
    expect(elsewhere.headers.get('location')).toBeNull();
  });

  it('names the credential’s id in the audit entry, never its value', async () => {
    // Audit entries are written in batches off the request path: wait for the proxied request's.
    let payments: { path: string; details: Record<string, unknown> | null } | undefined;
    await eventually(async () => {
      const audit = await admin('GET', '/admin/audit?limit=1000');
      payments = (audit.body.entries as Array<{ path: string; details: Record<string, unknown> | null }>).find((entry) => entry.path === '/payments/invoices');
      return payments !== undefined;
    }, 15_000, 'the audit entry of a request to /payments/invoices');
    expect(payments?.details).toMatchObject({ credentialId: paymentsId });
    const changes = await admin('GET', '/admin/audit?limit=100');
    expect(changes.text).toContain('credential.create');
  });

  it('rotates under traffic without losing a request', async () => {
    acceptedPaymentKeys.add(ROTATED_KEY);
    let rotated = false;
    let stop = false;
    const statuses: number[] = [];
    const afterRotation: string[] = [];
    const traffic = Array.from({ length: 4 }, async () => {
      while (!stop) {
        const wasRotated = rotated;
        const got = await proxied('GET', '/proxy/payments/invoices');
        statuses.push(got.status);
        if (wasRotated) afterRotation.push(got.body.key as string);
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const rotation = await admin('POST', `/admin/credentials/${paymentsId}/rotate`, { value: ROTATED_KEY });
    expect(rotation.status).toBe(200);
    expect(rotation.body).toMatchObject({ id: paymentsId, version: 2 });
    rotated = true;
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The old key stops working upstream; every request sent after the rotation carried the new one.
    acceptedPaymentKeys.delete(PAYMENTS_KEY);
    await new Promise((resolve) => setTimeout(resolve, 300));
    stop = true;
    await Promise.all(traffic);
    expect(statuses.length).toBeGreaterThan(20);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(afterRotation.length).toBeGreaterThan(5);
    expect(new Set(afterRotation)).toEqual(new Set(['rotated']));
  });

  it('stops injecting a revoked credential', async () => {
    const created = await admin('POST', '/admin/credentials', { route: '/proxy/payments/archive', type: 'header', name: 'X-Api-Key', value: secret('archive') });
    expect((await admin('DELETE', `/admin/credentials/${created.body.id as string}`)).body).toMatchObject({ revokedAt: expect.any(String) });
    // The longer prefix is gone: /proxy/payments' own credential applies again.
    expect((await proxied('GET', '/proxy/payments/archive/1')).body).toEqual({ ok: true, key: 'rotated' });
  });
});

describe('decision tokens', () => {
  it('lets the SDK middleware accept a governed call and refuse a direct one', async () => {
    const through = await proxied('POST', '/proxy/verified/orders?id=7', { body: '{"item":"paper"}', headers: { 'content-type': 'application/json' } });
    expect(through.status).toBe(200);
    expect(through.body.decision).toMatchObject({ action: 'write:verified/orders', decisionId: expect.stringMatching(/^aud_/), agentId: expect.stringMatching(/^agent_/) });
    const around = await direct('POST', '/verified/orders?id=7', { body: '{"item":"paper"}', headers: { 'content-type': 'application/json' } });
    expect(around.status).toBe(401);
    expect(around.body).toMatchObject({ error: 'decision_token_invalid', problem: 'missing' });
  });

  it('refuses a token replayed for another path, another query or another body', async () => {
    expect((await proxied('GET', '/proxy/verified/orders/1')).status).toBe(200);
    const token = received[received.length - 1].headers['x-service-decision-token'] as string;
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+~[\w-]+~[\w-]*$/);
    // The same request, replayed directly within the token's minute, is what a token cannot stop: it passes.
    expect((await direct('GET', '/verified/orders/1', { headers: { 'x-service-decision-token': token } })).status).toBe(200);
    for (const [method, route] of [
      ['GET', '/verified/orders/2'],
      ['GET', '/verified/orders/1?all=1'],
      ['DELETE', '/verified/orders/1'],
    ]) {
      const replayed = await direct(method, route, { headers: { 'x-service-decision-token': token } });
      expect(replayed.status).toBe(401);
      expect(replayed.body.problem).toBe('wrong_request');
    }
    expect((await proxied('POST', '/proxy/verified/orders', { body: '{"amount":1}' })).status).toBe(200);
    const posted = received[received.length - 1].headers['x-service-decision-token'] as string;
    const otherBody = await direct('POST', '/verified/orders', { body: '{"amount":1000}', headers: { 'x-service-decision-token': posted } });
    expect(otherBody.body.problem).toBe('wrong_request');
    const tampered = token.replace(/~([\w-]+)~/, (_all, claims: string) => `~${Buffer.from(Buffer.from(claims, 'base64url').toString().replace('orders', 'orderz')).toString('base64url')}~`);
    expect((await direct('GET', '/verified/orders/1', { headers: { 'x-service-decision-token': tampered } })).body.problem).toBe('bad_signature');
  });

  it('binds a chunked body too: read whole before it is forwarded, its hash signed', async () => {
    const chunked = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const request = http.request(`${gateway.url}/proxy/verified/uploads`, { method: 'PUT', headers: { authorization: `Bearer ${agentToken}`, 'content-type': 'application/octet-stream' } }, (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode!, text }));
      });
      request.on('error', reject);
      request.write(Buffer.alloc(70_000, 1));
      setTimeout(() => request.end(Buffer.alloc(30_000, 2)), 50);
    });
    seen.push(chunked.text);
    expect(chunked.status).toBe(200);
    const forwarded = received[received.length - 1];
    expect(forwarded.headers['content-length']).toBe('100000');
  });

  it('refuses an expired token', async () => {
    const expired = await proxied('GET', '/proxy/later/orders');
    expect(expired.status).toBe(401);
    expect(expired.body.problem).toBe('expired');
  });

  it('never forwards a token the agent sent: the upstream gets the gateway’s own', async () => {
    expect((await proxied('GET', '/proxy/verified/orders/3')).status).toBe(200);
    const genuine = received[received.length - 1].headers['x-service-decision-token'] as string;
    const forged = await proxied('GET', '/proxy/verified/orders/3', { headers: { 'x-service-decision-token': genuine } });
    expect(forged.status).toBe(200);
    const forwarded = received[received.length - 1].headers['x-service-decision-token'] as string;
    expect(forwarded).not.toBe(genuine);
    expect((await proxied('GET', '/proxy/payments/invoices', { headers: { 'x-service-decision-token': 'agent-made' } })).status).toBe(200);
    expect(received[received.length - 1].headers['x-service-decision-token']).not.toBe('agent-made');
  });
});

describe('the key that seals credentials', () => {
  it('refuses to start with a key the stored credentials do not decrypt with, naming the variable', async () => {
    await gateway.stop();
    const wrong = startGateway({ CREDENTIALS_KEY_FILE: wrongKeyFile });
    const exit = await wrong.exit;
    expect(exit.code).not.toBe(0);
    expect(wrong.output().stderr + wrong.output().stdout).toMatch(/cannot be decrypted with CREDENTIALS_KEY_FILE.*set CREDENTIALS_KEY_FILE/s);
    const none = startGateway({});
    expect((await none.exit).code).not.toBe(0);
    expect(none.output().stderr + none.output().stdout).toMatch(/CREDENTIALS_KEY_FILE and CREDENTIALS_KEY are unset/);
  }, 120_000);

  it('rotates the key: started with the new key and the previous one, it seals every row again; then the new key alone serves', async () => {
    const rolling = startGateway({ CREDENTIALS_KEY_FILE: newKeyFile, CREDENTIALS_PREVIOUS_KEY_FILE: keyFile });
    gateway = rolling;
    await waitFor(rolling, '/health', (status) => status === 200);
    expect((await proxied('GET', '/proxy/payments/invoices')).body).toEqual({ ok: true, key: 'rotated' });
    const client = new Client({ connectionString: database.url });
    await client.connect();
    const keyIds = await client.query<{ key_id: string }>('SELECT DISTINCT key_id FROM upstream_credentials WHERE revoked_at IS NULL').finally(() => client.end());
    expect(keyIds.rows).toEqual([{ key_id: credentialKeyId(Buffer.from(fs.readFileSync(newKeyFile, 'utf8'), 'hex')) }]);
    await rolling.stop();
    gateway = startGateway({ CREDENTIALS_KEY_FILE: newKeyFile });
    await waitFor(gateway, '/health', (status) => status === 200);
    expect((await proxied('GET', '/proxy/payments/invoices')).body).toEqual({ ok: true, key: 'rotated' });
    expect((await proxied('GET', '/proxy/search?q=x')).status).toBe(200);
  }, 120_000);
});

describe('the secrets', () => {
  it('appear in no answer, log line, metric or audit entry', async () => {
    await answer(call(gateway.url, 'GET', '/metrics', { bearer: METRICS_TOKEN }));
    await admin('GET', '/admin/audit?limit=500');
    await admin('GET', '/admin/credentials');
    await answer(call(gateway.url, 'GET', '/dashboard/'));
    const outputs = processes.map((service) => service.output().stdout + service.output().stderr);
    expect(outputs.join('').length).toBeGreaterThan(1000);
    for (const value of SECRETS) {
      for (const text of [...seen, ...outputs]) expect(text.includes(value)).toBe(false);
    }
  });
});
