import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createLocalJWKSet, JSONWebKeySet, jwtVerify } from 'jose';
import { call } from './support/http-client';

/**
 * The gateway as `npm start` runs it with no DATABASE_URL: embedded PGlite in DATA_DIR, a
 * generated admin token printed once, data kept across restarts, one process per DATA_DIR.
 */


const GATEWAY_MAIN = path.resolve(__dirname, '../dist/src/main.js');
const ADMIN_TOKEN_PATTERN = /adm_[A-Za-z0-9_-]{20,}/;

interface GatewayProcess {
  child: ChildProcess;
  url: string;
  output(): { stdout: string; stderr: string };
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-embedded-'));
const started: GatewayProcess[] = [];

afterAll(async () => {
  for (const gateway of started) {
    if (gateway.child.exitCode === null && gateway.child.signalCode === null) {
      gateway.child.kill('SIGKILL');
      await gateway.exit;
    }
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Spawns the built gateway with only the variables a user would set. */
async function launch(): Promise<GatewayProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [GATEWAY_MAIN], {
    env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', POLICIES_FILE: '/dev/null', PDP_GRPC_PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const gateway = { child, url: `http://127.0.0.1:${port}`, output: () => ({ stdout, stderr }), exit };
  started.push(gateway);
  return gateway;
}

/** The promise's value, or 'timeout' after `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until the process answers /health, or throws with its output if it exits first. */
async function ready(gateway: GatewayProcess, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (gateway.child.exitCode !== null) throw new Error(`gateway exited with ${gateway.child.exitCode}: ${gateway.output().stderr}`);
    if (gateway.output().stdout.includes('gateway listening')) {
      const health = await call(gateway.url, 'GET', '/health').catch(() => null);
      if (health?.status === 200) return;
    }
    if (Date.now() > deadline) throw new Error(`gateway not ready after ${timeoutMs} ms: ${gateway.output().stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('embedded database start', () => {
  let first: GatewayProcess;
  let adminToken: string;
  let agentId: string;

  it('prints a generated admin token and runs on the embedded database', async () => {
    first = await launch();
    await ready(first);
    const { stdout, stderr } = first.output();
    const printed = /==== ADMIN TOKEN \(org_default, shown once: store it now\) ====\n(adm_[A-Za-z0-9_-]{20,})\n/.exec(stderr);
    expect(printed).not.toBeNull();
    adminToken = printed![1];
    // stdout holds only JSON log lines, and none of the framework's start-up narration at info.
    const lines = stdout.trim().split('\n');
    expect(lines.every((line) => line.startsWith('{'))).toBe(true);
    expect(stdout).not.toContain(adminToken);
    expect(stdout).not.toContain('InstanceLoader');
    expect(lines.length).toBeLessThan(15);

    const health = await call<{ status: string; database: { status: string; kind: string } }>(first.url, 'GET', '/health');
    expect(health.body).toMatchObject({ status: 'healthy', database: { status: 'up', kind: 'embedded' } });
    const org = await call(first.url, 'GET', '/admin/organization', { adminToken });
    expect(org.status).toBe(200);
    expect(org.body).toMatchObject({ id: 'org_default', plan: 'enterprise' });
  });

  it('creates an agent whose token verifies against the JWKS', async () => {
    const created = await call<{ id: string; token: string }>(first.url, 'POST', '/admin/agents', { adminToken, body: { name: 'embedded-bot', trustTier: 'verified', tags: ['local'] } });
    expect(created.status).toBe(201);
    agentId = created.body.id;
    const jwks = await call<JSONWebKeySet>(first.url, 'GET', '/.well-known/jwks.json');
    const { payload } = await jwtVerify(created.body.token, createLocalJWKSet(jwks.body));
    expect(payload).toMatchObject({ sub: agentId, tier: 'verified', org: 'org_default' });
    expect(fs.existsSync(path.join(dataDir, 'signing-key.pem'))).toBe(true);
  });

  it('refuses a second process on the same DATA_DIR while the first runs', async () => {
    const second = await launch();
    const exit = await within(second.exit, 45_000);
    expect(exit).not.toBe('timeout');
    expect(exit).toMatchObject({ code: expect.any(Number) });
    expect((exit as { code: number }).code).not.toBe(0);
    expect(second.output().stderr).toMatch(/in use/);
    expect(second.output().stderr).toContain(dataDir);
    expect((await call(first.url, 'GET', '/health')).status).toBe(200);
    expect((await call(first.url, 'GET', `/admin/agents/${agentId}`, { adminToken })).status).toBe(200);
  });

  it('stops cleanly on SIGTERM', async () => {
    first.child.kill('SIGTERM');
    const exit = await within(first.exit, 30_000);
    expect([{ code: 0, signal: null }, { code: null, signal: 'SIGTERM' }]).toContainEqual(exit);
    expect(first.output().stderr).not.toMatch(/error/i);
  });

  it('keeps its data and its admin token across a restart, printing no new token', async () => {
    const restarted = await launch();
    await ready(restarted);
    expect(restarted.output().stdout).not.toMatch(ADMIN_TOKEN_PATTERN);
    expect(restarted.output().stderr).not.toMatch(ADMIN_TOKEN_PATTERN);
    const agent = await call(restarted.url, 'GET', `/admin/agents/${agentId}`, { adminToken });
    expect(agent.status).toBe(200);
    expect(agent.body).toMatchObject({ id: agentId, name: 'embedded-bot', trustTier: 'verified', tags: ['local'], status: 'active' });
    restarted.child.kill('SIGTERM');
    await restarted.exit;
  });
});
