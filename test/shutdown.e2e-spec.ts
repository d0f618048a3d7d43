import fs from 'node:fs';
import http from 'node:http';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { call } from './support/http-client';
import { GatewayProcess, gatewayReady, killGateway, launchGateway, within } from './support/gateway-process';
import { TEST_ADMIN_TOKEN, TEST_PUBLIC_URL, testDatabaseKind, testDatabaseUrl } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * SIGTERM to the gateway process (docs/architecture.md "Shutdown"), with a keep-alive client
 * holding connections: requests in flight are answered with `Connection: close`, idle
 * connections are closed, the audit queue is written, and the process exits 0 within
 * SHUTDOWN_TIMEOUT_MS; past it, exit 1. On PostgreSQL when DATABASE_URL is set, else on the
 * embedded PGlite in a DATA_DIR, as a user runs it.
 */

const kind = testDatabaseKind();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-shutdown-'));
const launched: GatewayProcess[] = [];
let upstream: TestUpstream;
let traceSeq = 0;
/** 64 MiB: more than the socket buffers hold, so the answer is in flight until the client reads it. */
const STREAM_CHUNKS = 1024;
const STREAM_BYTES = STREAM_CHUNKS * 64 * 1024;

beforeAll(async () => {
  upstream = await startUpstream();
});
// A test that failed half-way must not leave its gateway holding the data directory.
afterEach(async () => {
  for (const gateway of launched) await killGateway(gateway);
});
afterAll(async () => {
  await upstream.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** The gateway process on this run's database: PostgreSQL, or the embedded database in `dataDir`. */
async function start(env: Record<string, string> = {}): Promise<GatewayProcess> {
  const database: Record<string, string> = kind === 'postgres' ? { DATABASE_URL: testDatabaseUrl(), DATABASE_POOL_MAX: '4' } : { DATA_DIR: dataDir };
  const gateway = await launchGateway({
    ...database,
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    PUBLIC_URL: TEST_PUBLIC_URL,
    SIGNING_KEY_FILE: process.env.TEST_SIGNING_KEY_FILE!,
    POLICIES_FILE: '/dev/null',
    UPSTREAM_URL: upstream.url,
    LOG_LEVEL: 'info',
    ...env,
  });
  launched.push(gateway);
  await gatewayReady(gateway);
  return gateway;
}

async function createAgent(gateway: GatewayProcess): Promise<{ id: string; token: string }> {
  const created = await call<{ id: string; token: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: TEST_ADMIN_TOKEN, body: { name: 'shutdown-bot' } });
  expect(created.status).toBe(201);
  return created.body;
}

interface Answer {
  status: number;
  connection: string | undefined;
  socket: Socket;
  answeredAtMs: number;
}

/** One proxied GET on the keep-alive `agent`, with its own trace id. */
function send(agent: http.Agent, gateway: GatewayProcess, token: string, proxyPath: string, traceId: string): Promise<Answer> {
  const { hostname, port } = new URL(gateway.url);
  return new Promise((resolve, reject) => {
    const request = http.request({ hostname, port, path: `/proxy${proxyPath}`, agent, headers: { authorization: `Bearer ${token}`, 'x-trace-id': traceId } }, (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? 0, connection: response.headers.connection, socket: request.socket!, answeredAtMs: Date.now() }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end();
  });
}

interface UnreadAnswer {
  status: number;
  connection: string | undefined;
  socket: Socket;
  /** Reads the body to its end; resolves with its length. */
  read(): Promise<number>;
}

/** The same, resolved at the response's headers: the client reads the body only when told, so the answer stays in flight. */
function sendUnread(agent: http.Agent, gateway: GatewayProcess, token: string, proxyPath: string, traceId: string): Promise<UnreadAnswer> {
  const { hostname, port } = new URL(gateway.url);
  return new Promise((resolve, reject) => {
    const request = http.request({ hostname, port, path: `/proxy${proxyPath}`, agent, headers: { authorization: `Bearer ${token}`, 'x-trace-id': traceId } }, (response) => {
      const read = () =>
        new Promise<number>((done, failed) => {
          let bytes = 0;
          response.on('data', (chunk: Buffer) => (bytes += chunk.length));
          response.on('end', () => done(bytes));
          response.on('error', failed);
        });
      resolve({ status: response.statusCode ?? 0, connection: response.headers.connection, socket: request.socket!, read });
    });
    request.on('error', reject);
    request.end();
  });
}

function nextTrace(label: string): string {
  return `shutdown-${process.pid}-${label}-${++traceSeq}`;
}

/** A trace id for a decision the audit log must show, remembered in `traces`. */
function recorded(traces: string[], label: string): string {
  const trace = nextTrace(label);
  traces.push(trace);
  return trace;
}

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function closed(socket: Socket): Promise<void> {
  return socket.destroyed ? Promise.resolve() : new Promise((resolve) => socket.once('close', () => resolve()));
}

describe(`SIGTERM with keep-alive connections and requests in flight (${kind})`, () => {
  const timeoutMs = 15_000;
  let agentId: string;
  const traces: string[] = [];

  it('answers every request in flight with 200 and Connection: close, closes idle connections and exits 0 within SHUTDOWN_TIMEOUT_MS', async () => {
    // A long flush interval: the entries are still in memory at SIGTERM, so only the shutdown drain writes them.
    const gateway = await start({ SHUTDOWN_TIMEOUT_MS: String(timeoutMs), AUDIT_FLUSH_MS: '60000' });
    const { id, token } = await createAgent(gateway);
    agentId = id;
    const client = new http.Agent({ keepAlive: true });

    const warm = await Promise.all([0, 1, 2, 3, 4, 5].map(() => send(client, gateway, token, '/warm', recorded(traces, 'warm'))));
    expect(warm.map((answer) => [answer.status, answer.connection])).toEqual(Array(6).fill([200, 'keep-alive']));
    const sockets = new Set(warm.map((answer) => answer.socket));
    expect(sockets.size).toBe(6);

    // Four requests the upstream holds for 2 s and one long answer whose headers are sent, on
    // five of the six connections; one stays idle.
    const heldPath = `/slow/2000?run=${process.pid}`;
    const held = [0, 1, 2, 3].map(() => send(client, gateway, token, heldPath, recorded(traces, 'held')));
    const streamPath = `/stream/${STREAM_CHUNKS}?run=${process.pid}`;
    const streaming = await sendUnread(client, gateway, token, streamPath, recorded(traces, 'stream'));
    expect(streaming).toMatchObject({ status: 200, connection: 'keep-alive' });
    await until(() => upstream.received(heldPath).length === 4);
    const idle = Object.values(client.freeSockets).flat() as Socket[];
    expect(idle).toHaveLength(1);

    const sigtermAtMs = Date.now();
    gateway.child.kill('SIGTERM');
    // The idle connection closes at once, while the requests in flight still wait for the upstream.
    await closed(idle[0]);
    const idleClosedAtMs = Date.now();
    const answers = await Promise.all(held);
    for (const answer of answers) {
      expect(answer).toMatchObject({ status: 200, connection: 'close' });
      expect(answer.answeredAtMs).toBeGreaterThan(idleClosedAtMs);
      expect(sockets.has(answer.socket)).toBe(true);
    }
    // Still in flight at SIGTERM (the client had not read it): answered whole. Its connection must
    // then close, or the server never closes and the exit below is the forced one (1).
    expect(upstream.received(streamPath)[0].streamed!.written).toBeLessThan(STREAM_BYTES);
    expect(await streaming.read()).toBe(STREAM_BYTES);
    expect(sockets.has(streaming.socket)).toBe(true);

    const exit = await within(gateway.exit, timeoutMs + 5_000);
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exit !== 'timeout' && exit.atMs - sigtermAtMs).toBeLessThan(timeoutMs);
    expect(gateway.output().stdout).toContain('shutdown complete');
    expect(gateway.output().stdout).not.toMatch(/"level":"error"/);
    client.destroy();
  });

  it('has every decision made before the shutdown in the audit log after a restart', async () => {
    expect(traces).toHaveLength(11);
    const gateway = await start();
    const audit = await call<{ entries: Array<{ traceId: string; decision: string; status: number | null }> }>(
      gateway.url,
      'GET',
      `/admin/audit?source=proxy&agentId=${agentId}&limit=1000`,
      { adminToken: TEST_ADMIN_TOKEN },
    );
    expect(audit.status).toBe(200);
    expect(audit.body.entries.map((entry) => entry.traceId).sort()).toEqual([...traces].sort());
    expect(audit.body.entries.every((entry) => entry.decision === 'allow' && entry.status === 200)).toBe(true);
    gateway.child.kill('SIGTERM');
    expect(await within(gateway.exit, 20_000)).toMatchObject({ code: 0, signal: null });
  });
});

describe(`SIGTERM with a request stuck past SHUTDOWN_TIMEOUT_MS (${kind})`, () => {
  it('exits 1 at the bound and says so in the log', async () => {
    const timeoutMs = 1_500;
    const gateway = await start({ SHUTDOWN_TIMEOUT_MS: String(timeoutMs) });
    const { token } = await createAgent(gateway);
    const client = new http.Agent({ keepAlive: true });
    const stuckPath = `/slow/600000?stuck=${process.pid}`;
    const stuck = send(client, gateway, token, stuckPath, nextTrace('stuck')).catch((error: Error) => error);
    await until(() => upstream.received(stuckPath).length === 1);

    const sigtermAtMs = Date.now();
    gateway.child.kill('SIGTERM');
    const exit = await within(gateway.exit, timeoutMs + 10_000);
    expect(exit).toMatchObject({ code: 1, signal: null });
    const tookMs = exit !== 'timeout' ? exit.atMs - sigtermAtMs : Infinity;
    expect(tookMs).toBeGreaterThanOrEqual(timeoutMs - 50);
    expect(tookMs).toBeLessThan(timeoutMs + 5_000);
    expect(gateway.output().stdout).toMatch(/"level":"error".*shutdown not finished within SHUTDOWN_TIMEOUT_MS/);
    expect(await stuck).toMatchObject({ code: 'ECONNRESET' });
    client.destroy();
  });
});
