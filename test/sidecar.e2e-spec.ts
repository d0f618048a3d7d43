import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { calculateJwkThumbprint, JWK, SignJWT } from 'jose';
import { call, TestResponse } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { eventually, freePort, GATEWAY_MAIN, launch, ServiceProcess, SIDECAR_MAIN, waitFor, HEALTH_TOKEN, waitForHealth } from './support/processes';
import { testDatabaseKind } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * The edge sidecar as users run it: the built gateway and the built sidecar as separate
 * processes (`node dist/src/main.js`, `node dist/src/sidecar/main.js`), on PostgreSQL when
 * DATABASE_URL is set, else the gateway's embedded PGlite in a temporary DATA_DIR.
 */

const ADMIN_TOKEN = 'sidecar-e2e-admin-token-0123456789';
const PUBLIC_URL = 'http://gateway.sidecar.test';
const DELEGATION_POLICY = `
  - name: no-deep-delegation
    rules:
      - name: depth
        condition: delegation.depth > 2
        action: deny
        reason: Delegation chains deeper than 2 are refused
`;

interface Agent {
  id: string;
  token: string;
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sidecar-e2e-'));
const dataDir = path.join(scratch, 'data');
const cacheDir = path.join(scratch, 'cache');
const signingKeyFile = path.join(scratch, 'signing-key.pem');
const policiesFile = path.join(scratch, 'policies.yaml');
let database: OwnDatabase | undefined;
let upstream: TestUpstream;
let gatewayPort: number;
let sidecarPort: number;
let gateway: ServiceProcess;
let sidecar: ServiceProcess;
const started: ServiceProcess[] = [];
const agents: Record<string, Agent> = {};

function gatewayEnv(): Record<string, string> {
  const env: Record<string, string> = {
    ADMIN_TOKEN,
    PUBLIC_URL,
    PDP_GRPC_PORT: '0',
    POLICIES_FILE: policiesFile,
    SIGNING_KEY_FILE: signingKeyFile,
    UPSTREAM_URL: upstream.url,
    AUDIT_FLUSH_MS: '10',
    LOG_LEVEL: 'warn',
  };
  if (database) env.DATABASE_URL = database.url;
  else env.DATA_DIR = dataDir;
  return env;
}

async function startGatewayProcess(): Promise<ServiceProcess> {
  const process = launch(GATEWAY_MAIN, gatewayPort, gatewayEnv());
  started.push(process);
  await waitFor(process, '/health', (status) => status === 200, 90_000);
  return process;
}

async function startSidecarProcess(env: Record<string, string> = {}): Promise<ServiceProcess> {
  const process = launch(SIDECAR_MAIN, sidecarPort, {
    METRICS_TOKEN: HEALTH_TOKEN,
    GATEWAY_URL: `http://127.0.0.1:${gatewayPort}`,
    ADMIN_TOKEN,
    CACHE_DIR: cacheDir,
    BUNDLE_SYNC_INTERVAL: '1',
    AUDIT_FORWARD_INTERVAL_MS: '100',
    UPSTREAM_URL: upstream.url,
    SIDECAR_ID: 'sc_e2e-edge',
    LOG_LEVEL: 'warn',
    ...env,
  });
  started.push(process);
  await waitForHealth(process, (status) => status === 200 || status === 503, 60_000);
  return process;
}

const admin = <T = Record<string, unknown>>(method: string, route: string, body?: unknown) => call<T>(gateway.url, method, route, { adminToken: ADMIN_TOKEN, body });

async function createAgent(name: string, trustTier: string, tags: string[] = []): Promise<Agent> {
  const created = await admin<Agent>('POST', '/admin/agents', { name, trustTier, tags });
  expect(created.status).toBe(201);
  return { id: created.body.id, token: created.body.token };
}

function enforce(agent: Agent, body: Record<string, unknown>, headers: Record<string, string> = {}, token = agent.token): Promise<TestResponse> {
  return call(sidecar.url, 'POST', '/enforce', { bearer: token, body: { agentId: agent.id, ...body }, headers });
}

/** A token for `agent` acting for `delegators` (original delegator first), signed with the gateway's key as the gateway signs. */
async function delegatedToken(agent: Agent, tier: string, delegators: string[], scope?: string[]): Promise<string> {
  const privateKey = createPrivateKey(fs.readFileSync(signingKeyFile, 'utf8'));
  const kid = await calculateJwkThumbprint(createPublicKey(privateKey).export({ format: 'jwk' }) as JWK);
  // The original delegator is innermost: [root, analyst] is root → analyst → agent.
  const act = delegators.reduce<Record<string, unknown> | undefined>((inner, sub) => (inner ? { sub, act: inner } : { sub }), undefined);
  return new SignJWT({ name: 'delegate', trust: tier, tier, tags: [], org: 'org_default', act, ...(scope ? { scope } : {}) })
    .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'JWT' })
    .setSubject(agent.id)
    .setIssuer(PUBLIC_URL)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(privateKey);
}

beforeAll(async () => {
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(policiesFile, fs.readFileSync(path.resolve(__dirname, '../config/policies.yaml'), 'utf8') + DELEGATION_POLICY);
  if (testDatabaseKind() === 'postgres') database = await ownDatabase();
  upstream = await startUpstream();
  gatewayPort = await freePort();
  sidecarPort = await freePort();
  gateway = await startGatewayProcess();
  agents.reader = await createAgent('reader', 'verified');
  agents.newbie = await createAgent('newbie', 'unverified');
  agents.root = await createAgent('root', 'privileged');
  agents.analyst = await createAgent('analyst', 'trusted', ['pii']);
  agents.offline = await createAgent('offline-bot', 'verified');
  agents.doomed = await createAgent('doomed', 'trusted');
  sidecar = await startSidecarProcess();
  await waitForHealth(sidecar, (status, body) => status === 200 && (body.cachedAgents as number) >= 6);
}, 240_000);

afterAll(async () => {
  for (const process of started) await process.kill();
  await upstream?.close();
  await database?.dispose();
  fs.rmSync(scratch, { recursive: true, force: true });
}, 60_000);

describe('starting the sidecar', () => {
  it('stops with a message naming each missing required variable', async () => {
    const bare = launch(SIDECAR_MAIN, await freePort(), { CACHE_DIR: path.join(scratch, 'bare') });
    const exit = await bare.exit;
    expect(exit.code).toBe(1);
    expect(bare.output().stderr).toContain('GATEWAY_URL is required');
    expect(bare.output().stderr).toContain('ADMIN_TOKEN is required');
  });

  it('loads no TypeORM, pg, ioredis, billing, analytics or database code', () => {
    const root = path.resolve(__dirname, '../dist/src');
    const script = `
      const { SidecarConfig } = require(${JSON.stringify(path.join(root, 'sidecar/sidecar-config.js'))});
      const { createSidecar } = require(${JSON.stringify(path.join(root, 'sidecar/sidecar-app.js'))});
      const pino = require('pino');
      const config = SidecarConfig.fromEnv({ GATEWAY_URL: 'http://127.0.0.1:9', ADMIN_TOKEN: 'x', CACHE_DIR: ${JSON.stringify(path.join(scratch, 'graph'))} });
      createSidecar(config, pino({ level: 'silent' })).then(async (app) => {
        const loaded = Object.keys(require.cache).filter((file) => /node_modules[\\\\/](typeorm|pg|ioredis|stripe|@nestjs[\\\\/]typeorm)[\\\\/]|dist[\\\\/]src[\\\\/](billing|analytics|database)[\\\\/]/.test(file));
        await app.close();
        process.stdout.write(JSON.stringify({ loaded, sidecar: Object.keys(require.cache).some((file) => file.endsWith('sidecar.module.js')) }));
        process.exit(0);
      });`;
    const result = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', cwd: path.resolve(__dirname, '..') })) as { loaded: string[]; sidecar: boolean };
    expect(result).toEqual({ loaded: [], sidecar: true });
  });
});

describe('decisions at the edge', () => {
  type Case = [label: string, agent: string, method: string, route: string, options: { body?: Record<string, unknown>; context?: Record<string, string> }];
  const cases: Case[] = [
    ['verified read', 'reader', 'GET', 'docs/a', {}],
    ['system path', 'reader', 'GET', 'etc/passwd', {}],
    ['dot-dot path', 'analyst', 'GET', 'docs/../etc/shadow', {}],
    ['unverified write', 'newbie', 'POST', 'notes/1', {}],
    ['verified write', 'reader', 'POST', 'notes/1', {}],
    ['admin area, verified', 'reader', 'GET', 'admin/users', {}],
    ['admin area, privileged', 'root', 'GET', 'admin/users', {}],
    ['customers without pii tag', 'reader', 'GET', 'customers/42', {}],
    ['customers with pii tag', 'analyst', 'GET', 'customers/42', {}],
    ['large refund', 'reader', 'POST', 'refunds/1', { body: { amount: 5000, currency: 'usd' } }],
    ['odd currency', 'root', 'POST', 'refunds/1', { body: { amount: 10, currency: 'btc' } }],
    ['production delete, verified', 'reader', 'DELETE', 'files/1', { context: { environment: 'production' } }],
    ['production delete, trusted', 'analyst', 'DELETE', 'files/1', { context: { environment: 'production' } }],
  ];

  it.each(cases)('agrees with the gateway: %s', async (_label, agentName, method, route, options) => {
    const agent = agents[agentName];
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(options.context ?? {})) headers[`x-service-context-${name}`] = value;
    const viaGateway = await call(gateway.url, method, `/proxy/${route}`, { bearer: agent.token, body: options.body, headers });
    const verb = method === 'GET' ? 'read' : method === 'DELETE' ? 'delete' : 'write';
    const atEdge = await enforce(agent, { action: `${verb}:${route}`, resource: route, context: { ...options.context, args: { ...options.body, path: `/${route}`, method } } });
    expect(atEdge.status).toBe(200);
    expect({ decision: atEdge.body.decision, policy: atEdge.body.policy }).toEqual({
      decision: viaGateway.headers.get('x-service-decision'),
      policy: viaGateway.headers.get('x-service-policy'),
    });
    expect(atEdge.body).toMatchObject({ mode: 'enforce', bundleVersion: expect.any(String), latencyMs: expect.any(Number) });
    if (atEdge.body.decision === 'deny') expect(atEdge.body.reason).toBe((viaGateway.body as { reason?: string }).reason);
  });

  it('verifies delegated tokens offline and decides on the chain and the scope as the gateway does', async () => {
    const shallow = await delegatedToken(agents.reader, 'verified', [agents.root.id]);
    const deep = await delegatedToken(agents.reader, 'verified', [agents.root.id, agents.analyst.id]);
    for (const [token, expected] of [[shallow, 'allow'], [deep, 'deny']] as const) {
      const viaGateway = await call(gateway.url, 'GET', '/proxy/docs/a', { bearer: token });
      const atEdge = await enforce(agents.reader, { action: 'read:docs/a', resource: 'docs/a', context: { args: { path: '/docs/a', method: 'GET' } } }, {}, token);
      expect(viaGateway.headers.get('x-service-decision')).toBe(expected);
      expect(atEdge.body).toMatchObject({ decision: expected });
    }
    const scoped = await delegatedToken(agents.reader, 'verified', [agents.root.id], ['read:docs/*']);
    for (const [method, route, verb] of [['GET', 'docs/a', 'read'], ['POST', 'notes/1', 'write']] as const) {
      const viaGateway = await call(gateway.url, method, `/proxy/${route}`, { bearer: scoped });
      const atEdge = await enforce(agents.reader, { action: `${verb}:${route}`, resource: route, context: { args: { path: `/${route}`, method } } }, {}, scoped);
      expect({ decision: atEdge.body.decision, policy: atEdge.body.policy }).toEqual({ decision: viaGateway.headers.get('x-service-decision'), policy: viaGateway.headers.get('x-service-policy') });
    }
    expect((await enforce(agents.reader, { action: 'write:notes/1' }, {}, scoped)).body).toMatchObject({ decision: 'deny' });
    const deepAtEdge = await enforce(agents.reader, { action: 'read:docs/a', resource: 'docs/a' }, {}, deep);
    expect(deepAtEdge.body).toMatchObject({ decision: 'deny', policy: 'no-deep-delegation', reason: 'Delegation chains deeper than 2 are refused' });
  });

  it('answers a batch, refuses a token of another agent, a bad token and a malformed body', async () => {
    const batch = await call(sidecar.url, 'POST', '/enforce/batch', {
      bearer: agents.reader.token,
      body: { agentId: agents.reader.id, actions: [{ action: 'read:docs/a', resource: 'docs/a' }, { action: 'read:etc/passwd', resource: 'etc/passwd', context: { args: { path: '/etc/passwd' } } }] },
    });
    expect(batch.status).toBe(200);
    expect(batch.body).toMatchObject({ allAllowed: false, mode: 'enforce', results: [{ action: 'read:docs/a', decision: 'allow' }, { action: 'read:etc/passwd', decision: 'deny', reason: 'Access to system files blocked' }] });
    expect((await enforce(agents.root, { action: 'read:x' }, {}, agents.reader.token)).status).toBe(403);
    const forged = await enforce(agents.reader, { action: 'read:x' }, {}, 'not.a.token');
    expect(forged.status).toBe(401);
    const noAction = await enforce(agents.reader, { resource: 'x' });
    expect(noAction.status).toBe(400);
    expect(noAction.body.message).toMatch(/action/);
    const badJson = await call(sidecar.url, 'POST', '/enforce', { bearer: agents.reader.token, body: '{nope', headers: { 'content-type': 'application/json' } });
    expect(badJson.status).toBe(400);
  });

  it('refuses a wrong-typed context.args, context.plugin or context.function with a 400 naming it, instead of deciding without it', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ args: '{"path":"/etc/passwd"}' }, /context\.args must be a JSON object/],
      [{ args: [{ path: '/etc/passwd' }] }, /context\.args must be a JSON object/],
      [{ args: null }, /context\.args must be a JSON object/],
      [{ plugin: 5 }, /context\.plugin must be a string/],
      [{ function: ['read'] }, /context\.function must be a string/],
    ];
    for (const [context, message] of cases) {
      const answer = await enforce(agents.reader, { action: 'read:etc/passwd', resource: 'etc/passwd', context });
      expect([answer.status, answer.body.error]).toEqual([400, 'invalid_request']);
      expect(answer.body.message).toMatch(message);
    }
    const batch = await call(sidecar.url, 'POST', '/enforce/batch', {
      bearer: agents.reader.token,
      body: { agentId: agents.reader.id, actions: [{ action: 'read:docs/a' }, { action: 'read:etc/passwd', context: { args: 'x' } }] },
    });
    expect(batch.status).toBe(400);
    expect(batch.body.message).toMatch(/actions\[1\]\.context\.args must be a JSON object/);
    const denied = await enforce(agents.reader, { action: 'read:etc/passwd', resource: 'etc/passwd', context: { args: { path: '/etc/passwd' } } });
    expect(denied.body).toMatchObject({ decision: 'deny', rule: 'system-paths' });
  });

  it('refuses a NUL as the gateway does, and forwards the entries of a very long action and very large args like any other', async () => {
    const nul = await enforce(agents.reader, { action: 'read:docs/a\u0000b' });
    expect(nul.status).toBe(400);
    expect(nul.body.message).toMatch(/NUL/);
    // Each was once written to the buffer as it came, and the gateway refused its batch for ever
    // (an action over the ingest's 64 KiB, a line over its 1 MiB body), holding back every later entry.
    const longAction = `read:docs/${'a'.repeat(100_000)}`;
    expect((await enforce(agents.reader, { action: longAction })).status).toBe(200);
    // 600 KB of args, within the sanitizer's bounds (100 keys of 2,048 characters at each level), twice in the input (args and context.args).
    const hundredKeys = () => Object.fromEntries(Array.from({ length: 100 }, (_, index) => [`k${index}`, 'p'.repeat(1990)]));
    const largeArgs = { path: '/docs/large', a: hundredKeys(), b: hundredKeys(), c: hundredKeys() };
    expect((await enforce(agents.reader, { action: 'read:docs/large', context: { args: largeArgs } })).status).toBe(200);
    const last = await enforce(agents.reader, { action: 'read:docs/after-the-large-ones' });
    expect(last.status).toBe(200);
    const forwarded = async () =>
      (await admin<{ entries: Array<{ action: string; input: { args?: Record<string, unknown> } | null }> }>('GET', `/admin/audit?agentId=${agents.reader.id}&source=sidecar&limit=1000`)).body.entries;
    await eventually(async () => (await forwarded()).some((entry) => entry.action === 'read:docs/after-the-large-ones'), 30_000, 'the entries after the large ones forwarded');
    const entries = await forwarded();
    const long = entries.find((entry) => entry.action.startsWith('read:docs/aaaa'))!;
    // Stored as the gateway stores a text it receives itself: at most 2,048 characters, marked.
    expect(long.action).toBe(`${longAction.slice(0, 2048)}…[truncated]`);
    const large = entries.find((entry) => entry.action === 'read:docs/large')!;
    expect(large.input).not.toBeNull();
    expect(JSON.stringify(large.input).length).toBeLessThan(512 * 1024);
    const health = await call<{ audit: { pendingEntries: number; dropped: number } }>(sidecar.url, 'GET', '/health', { bearer: HEALTH_TOKEN });
    expect(health.body.audit).toMatchObject({ dropped: 0 });
  });

  it('serves /v1/check, /api/v1/pdp/evaluate and /v1/audit like the gateway, with the same API key', async () => {
    const key = await admin<{ id: string; key: string }>('POST', '/admin/api-keys', { name: 'edge-adapter' });
    expect(key.status).toBe(201);
    const adapter = { 'x-api-key': key.body.key };
    const check = (url: string, body: Record<string, unknown>) => call(url, 'POST', '/v1/check', { headers: adapter, body });
    const personal = { agentId: agents.reader.id, plugin: 'EmailPlugin', function: 'SendMail', arguments: { to: 'someone@gmail.com' } };
    await eventually(async () => (await check(sidecar.url, personal)).status === 200, 15_000, 'the API key at the edge');
    for (const body of [personal, { ...personal, arguments: { to: 'team@corp.example' } }]) {
      const viaGateway = await check(gateway.url, body);
      const atEdge = await check(sidecar.url, body);
      expect(atEdge.status).toBe(200);
      expect({ decision: atEdge.body.decision, policy: atEdge.body.policy, reason: atEdge.body.reason }).toEqual({ decision: viaGateway.body.decision, policy: viaGateway.body.policy, reason: viaGateway.body.reason });
    }
    const evaluate = { agent_id: agents.reader.id, plugin: 'EmailPlugin', function: 'SendMail', args: { to: 'x@yahoo.com' } };
    const pdpGateway = await call(gateway.url, 'POST', '/api/v1/pdp/evaluate', { headers: adapter, body: evaluate });
    const pdpEdge = await call(sidecar.url, 'POST', '/api/v1/pdp/evaluate', { headers: adapter, body: evaluate });
    expect(pdpEdge.status).toBe(200);
    expect(pdpEdge.body).toMatchObject({ decision: pdpGateway.body.decision, policy: pdpGateway.body.policy });
    expect((await call(sidecar.url, 'POST', '/v1/check', { headers: { 'x-api-key': 'ak_wrong' }, body: personal })).status).toBe(401);
    for (const text of ['null', '"s"', '5', 'true']) {
      const send = (url: string) => call(url, 'POST', '/v1/audit', { headers: { ...adapter, 'content-type': 'application/json' }, body: text });
      const [atGateway, atEdge] = [await send(gateway.url), await send(sidecar.url)];
      expect([atEdge.status, atEdge.body.error]).toEqual([400, 'invalid_json']);
      expect([atEdge.status, atEdge.body.error]).toEqual([atGateway.status, atGateway.body.error]);
    }
    const list = await call(sidecar.url, 'POST', '/v1/audit', { headers: adapter, body: [] });
    expect([list.status, list.body.message]).toEqual([400, 'body must be a JSON object']);
    const invalid = { agentId: agents.reader.id, plugin: 'EmailPlugin', function: 'SendMail', decision: 'maybe', durationMs: 1, bogus: 1 };
    const [invalidAtGateway, invalidAtEdge] = [
      await call(gateway.url, 'POST', '/v1/audit', { headers: adapter, body: invalid }),
      await call(sidecar.url, 'POST', '/v1/audit', { headers: adapter, body: invalid }),
    ];
    expect(invalidAtGateway.body.fields).toHaveLength(2);
    expect([invalidAtEdge.status, invalidAtEdge.body]).toEqual([400, invalidAtGateway.body]);

    const outcome = { agentId: agents.reader.id, plugin: 'EmailPlugin', function: 'SendMail', decision: 'allow', durationMs: 12.5, resultSummary: 'sent', eventId: 'edge-event-1' };
    for (let attempt = 0; attempt < 2; attempt++) {
      const recorded = await call(sidecar.url, 'POST', '/v1/audit', { headers: adapter, body: outcome });
      expect(recorded.status).toBe(202);
    }
    await eventually(async () => {
      const audit = await admin<{ entries: Array<{ kind: string; action: string }> }>('GET', `/admin/audit?agentId=${agents.reader.id}&source=sidecar&limit=1000`);
      return audit.body.entries.some((entry) => entry.kind === 'outcome');
    }, 20_000, 'the outcome at the gateway');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const audit = await admin<{ entries: Array<{ kind: string; action: string }> }>('GET', `/admin/audit?agentId=${agents.reader.id}&source=sidecar&limit=1000`);
    expect(audit.body.entries.filter((entry) => entry.kind === 'outcome')).toEqual([expect.objectContaining({ action: 'EmailPlugin.SendMail' })]);
  });

  it('proxies /proxy/* to its own upstream, with the decision headers', async () => {
    const allowed = await call(sidecar.url, 'GET', '/proxy/docs/a?x=1', { bearer: agents.reader.token });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('x-service-decision')).toBe('allow');
    expect(upstream.requests.at(-1)).toMatchObject({ method: 'GET', url: '/docs/a?x=1' });
    const denied = await call(sidecar.url, 'GET', '/proxy/etc/passwd', { bearer: agents.reader.token });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ error: 'forbidden', policy: 'block-sensitive-files' });
  });

  it('applies a revocation at the next sync', async () => {
    expect((await enforce(agents.doomed, { action: 'read:docs/a' })).status).toBe(200);
    expect((await admin('DELETE', `/admin/agents/${agents.doomed.id}`)).status).toBe(200);
    await eventually(async () => (await enforce(agents.doomed, { action: 'read:docs/a' })).status === 401, 15_000, 'revocation at the edge');
    const refused = await enforce(agents.doomed, { action: 'read:docs/a' });
    expect(refused.body).toMatchObject({ error: 'unauthorized', message: 'Agent has been revoked' });
  });
});

describe('a gateway that refuses every audit batch', () => {
  /** Passes everything to the gateway but answers each audit batch 400, as a gateway that cannot take the sidecar's entries does. */
  async function refusingRelay(): Promise<{ url: string; close(): Promise<void> }> {
    const server = http.createServer((request, response) => {
      if (request.url === '/api/v1/audit/ingest') {
        request.resume();
        response.writeHead(400, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: 'invalid_request', message: 'entries.0.future must not exist' }));
        return;
      }
      const forwarded = http.request(`${gateway.url}${request.url}`, { method: request.method, headers: request.headers }, (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      });
      request.pipe(forwarded);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      close: () => {
        server.closeAllConnections();
        return new Promise((resolve) => server.close(() => resolve()));
      },
    };
  }

  it('shows the entries it never received in /admin/sidecars, not a clean fleet status', async () => {
    const relay = await refusingRelay();
    const refused = launch(SIDECAR_MAIN, await freePort(), {
      METRICS_TOKEN: HEALTH_TOKEN,
      GATEWAY_URL: relay.url,
      ADMIN_TOKEN,
      CACHE_DIR: path.join(scratch, 'cache-refused'),
      BUNDLE_SYNC_INTERVAL: '1',
      AUDIT_FORWARD_INTERVAL_MS: '100',
      SIDECAR_ID: 'sc_e2e-refused',
      LOG_LEVEL: 'error',
    });
    started.push(refused);
    try {
      await waitForHealth(refused, (status) => status === 200);
      for (let index = 0; index < 3; index++) {
        const answer = await call(refused.url, 'POST', '/enforce', { bearer: agents.reader.token, body: { action: `read:docs/${index}` } });
        expect(answer.status).toBe(200);
      }
      const health = await waitForHealth(refused, (_status, body) => (body.audit as { forwardError: string | null }).forwardError !== null);
      expect((health.audit as { pendingEntries: number }).pendingEntries).toBe(3);
      let edge: { lastSeq: number; gaps: unknown[]; unforwarded?: number } | undefined;
      await eventually(async () => {
        const fleet = await admin<{ sidecars: Array<{ id: string; lastSeq: number; gaps: unknown[]; unforwarded?: number }> }>('GET', '/admin/sidecars');
        edge = fleet.body.sidecars.find((entry) => entry.id === 'sc_e2e-refused');
        return edge?.unforwarded === 3;
      }, 15_000, 'the unforwarded entries in the fleet status').catch(() => undefined);
      expect(edge).toMatchObject({ lastSeq: 0, gaps: [], unforwarded: 3 });
    } finally {
      await refused.kill();
      await relay.close();
    }
  });
});

describe('an agent or API key made after the last sync', () => {
  it('is refused once, starts a sync at once, and is decided with a moment later, not a BUNDLE_SYNC_INTERVAL later', async () => {
    const edge = launch(SIDECAR_MAIN, await freePort(), {
      METRICS_TOKEN: HEALTH_TOKEN,
      GATEWAY_URL: gateway.url,
      ADMIN_TOKEN,
      CACHE_DIR: path.join(scratch, 'cache-early'),
      BUNDLE_SYNC_INTERVAL: '3600',
      SIDECAR_ID: 'sc_e2e-early',
      LOG_LEVEL: 'error',
    });
    started.push(edge);
    try {
      await waitForHealth(edge, (status) => status === 200);
      const newcomer = await createAgent('newcomer', 'verified');
      const ask = () => call(edge.url, 'POST', '/enforce', { bearer: newcomer.token, body: { agentId: newcomer.id, action: 'read:docs/a' } });
      expect((await ask()).status).toBe(401);
      // A fetch at most every 5 s: the one at start may be that recent.
      await eventually(async () => (await ask()).status === 200, 15_000, 'the new agent at the edge');
      const key = await admin<{ key: string }>('POST', '/admin/api-keys', { name: 'edge-newcomer' });
      const check = () => call(edge.url, 'POST', '/v1/check', { headers: { 'x-api-key': key.body.key }, body: { agentId: newcomer.id, plugin: 'A', function: 'b' } });
      expect((await check()).status).toBe(401);
      await eventually(async () => (await check()).status === 200, 15_000, 'the new API key at the edge');
    } finally {
      await edge.kill();
    }
  });
});

describe('with the gateway away', () => {
  const OFFLINE_BEFORE = 25;
  const OFFLINE_AFTER = 15;

  it('keeps enforcing, restarts from its cache after kill -9, and forwards every decision once when the gateway returns', async () => {
    const before = (await waitForHealth(sidecar, (status) => status === 200)) as { bundleVersion: string };
    await gateway.kill();
    await waitForHealth(sidecar, (_status, body) => body.gatewayReachable === false && body.lastSyncSuccess === false, 20_000);

    for (let index = 0; index < OFFLINE_BEFORE; index++) {
      const answer = await enforce(agents.offline, { action: index % 5 === 0 ? 'read:etc/passwd' : `read:docs/${index}`, context: { args: { path: index % 5 === 0 ? '/etc/passwd' : `/docs/${index}` } } });
      expect(answer.status).toBe(200);
      expect(answer.body.decision).toBe(index % 5 === 0 ? 'deny' : 'allow');
    }
    const offline = await call<{ gatewayReachable: boolean; lastSyncSuccess: boolean; bundleVersion: string; audit: { pendingEntries: number } }>(sidecar.url, 'GET', '/health', { bearer: HEALTH_TOKEN });
    expect(offline.body).toMatchObject({ status: 'healthy', gatewayReachable: false, lastSyncSuccess: false, bundleVersion: before.bundleVersion });
    expect(offline.body.audit.pendingEntries).toBeGreaterThanOrEqual(OFFLINE_BEFORE);

    await sidecar.kill();
    sidecar = await startSidecarProcess();
    const restarted = await waitForHealth(sidecar, (status) => status === 200);
    expect(restarted).toMatchObject({ status: 'healthy', bundleVersion: before.bundleVersion, gatewayReachable: false });
    for (let index = 0; index < OFFLINE_AFTER; index++) {
      const answer = await enforce(agents.offline, { action: `write:notes/${index}` });
      expect(answer.body).toMatchObject({ decision: 'allow', bundleVersion: before.bundleVersion });
    }

    gateway = await startGatewayProcess();
    const total = OFFLINE_BEFORE + OFFLINE_AFTER;
    await eventually(async () => {
      const health = await call<{ audit: { pendingEntries: number } }>(sidecar.url, 'GET', '/health', { bearer: HEALTH_TOKEN });
      return health.body.audit?.pendingEntries === 0;
    }, 60_000, 'the buffer forwarded');
    const audit = await admin<{ entries: Array<{ id: string; source: string; decision: string }> }>('GET', `/admin/audit?agentId=${agents.offline.id}&source=sidecar&limit=1000`);
    expect(audit.body.entries).toHaveLength(total);
    expect(new Set(audit.body.entries.map((entry) => entry.id)).size).toBe(total);
    expect(audit.body.entries.every((entry) => entry.source === 'sidecar')).toBe(true);
    expect(audit.body.entries.filter((entry) => entry.decision === 'deny')).toHaveLength(OFFLINE_BEFORE / 5);

    const fleet = await admin<{ sidecars: Array<{ id: string; gaps: unknown[]; lastSeq: number; received: number; mode: string }> }>('GET', '/admin/sidecars');
    const edge = fleet.body.sidecars.find((entry) => entry.id === 'sc_e2e-edge')!;
    expect(edge.gaps).toEqual([]);
    expect(edge.received).toBe(edge.lastSeq);
    expect(edge.mode).toBe('enforce');
    const verify = await admin('GET', '/admin/audit/verify');
    expect(verify.body).toMatchObject({ ok: true });
  }, 300_000);
});
