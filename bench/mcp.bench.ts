/**
 * The MCP gateway (docs/mcp.md): an allowed `tools/call` of `@modelcontextprotocol/server-everything`'s
 * `echo` through the gateway's `/mcp/<name>` against the same call made directly to that server
 * (Streamable HTTP on loopback), in one run, alternating rounds of sequential calls from one SDK
 * client each (target: under 1 ms added at p50). The gateway runs on the embedded database with a
 * policy that reads the call's arguments, pinning on, audit on.
 * `node dist/bench/run.js mcp`; BENCH_MCP_ROUNDS (8) and BENCH_MCP_CALLS (200) per round.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { perRound, type BenchReport, type BenchRow } from './report';
import { baseEnv, ChildSet, freePort, waitForHttp } from './servers/processes';

const ROOT = path.resolve(__dirname, '..', '..');
const ADMIN_TOKEN = 'bench-mcp-admin-token-0123456789abcdef';
const ROUNDS = Number(process.env.BENCH_MCP_ROUNDS ?? 8);
const CALLS = Number(process.env.BENCH_MCP_CALLS ?? 200);
const TARGET_ADDED_P50_MS = 1;
const POLICIES = `policies:
  - name: echoes
    match: { plugin: everything, function: echo }
    rules:
      - condition: args.message starts_with "secret-"
        action: deny
        reason: Secret messages are not echoed
`;
const SERVER_EVERYTHING = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');

async function client(url: string, token?: string): Promise<Client> {
  const mcp = new Client({ name: 'bench-agent', version: '1.0.0' });
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  await mcp.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return mcp;
}

async function round(mcp: Client, samples: number[]): Promise<void> {
  for (let index = 0; index < CALLS; index++) {
    const started = process.hrtime.bigint();
    await mcp.callTool({ name: 'echo', arguments: { message: `message-${index}` } });
    samples.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))];
}

function summary(subject: string, samples: number[]): BenchRow & { p50Ms: number; p99Ms: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = meanOf(sorted);
  // Calls per second of each round (samples are kept in call order, CALLS a round).
  const rounds = Array.from({ length: Math.floor(samples.length / CALLS) }, (_, index) => 1000 / meanOf(samples.slice(index * CALLS, (index + 1) * CALLS)));
  return { subject, opsPerSec: Math.round(1000 / mean), p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99), extra: { perRound: perRound(rounds), calls: sorted.length, meanMs: mean } };
}

function meanOf(values: readonly number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

export async function runMcpBench(): Promise<BenchReport> {
  const children = new ChildSet();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-bench-mcp-'));
  const onExit = () => children.killAllNow();
  process.on('exit', onExit);
  try {
    const upstreamPort = await freePort();
    const upstream = children.spawn('server-everything', process.execPath, [SERVER_EVERYTHING, 'streamableHttp'], { env: { ...baseEnv(), PORT: String(upstreamPort) } });
    const upstreamUrl = `http://127.0.0.1:${upstreamPort}/mcp`;
    // Its /mcp answers a GET without a session 400: it is up.
    await waitForHttp(upstreamUrl, upstream, 30_000, 400);
    fs.writeFileSync(path.join(tmp, 'servers.yaml'), `servers:\n  - name: everything\n    url: ${upstreamUrl}\n`);
    fs.writeFileSync(path.join(tmp, 'policies.yaml'), POLICIES);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const env = {
      ...baseEnv(),
      PORT: String(port),
      HOST: '127.0.0.1',
      PDP_GRPC_PORT: '0',
      ADMIN_TOKEN,
      DATA_DIR: path.join(tmp, 'data'),
      LOG_LEVEL: 'warn',
      POLICIES_FILE: path.join(tmp, 'policies.yaml'),
      MCP_SERVERS: path.join(tmp, 'servers.yaml'),
    };
    const gateway = children.spawn('gateway', process.execPath, [path.join(ROOT, 'dist', 'src', 'main.js')], { cwd: ROOT, env });
    await waitForHttp(`${url}/health`, gateway, 120_000);
    const created = await fetch(`${url}/admin/agents`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-admin-token': ADMIN_TOKEN }, body: JSON.stringify({ name: 'bench-mcp', trustTier: 'verified' }) });
    const { token } = (await created.json()) as { token: string };
    const direct = await client(upstreamUrl);
    const governed = await client(`${url}/mcp/everything`, token);
    const directSamples: number[] = [];
    const governedSamples: number[] = [];
    // Warm-up: connections, the tool's pin, the JIT.
    await round(direct, []);
    await round(governed, []);
    for (let index = 0; index < ROUNDS; index++) {
      await round(direct, directSamples);
      await round(governed, governedSamples);
    }
    await Promise.all([direct.close(), governed.close()]);
    const bare = summary('tools/call of echo directly to server-everything', directSamples);
    const through = summary('tools/call through the gateway (/mcp/everything: pin, policy, audit)', governedSamples);
    const addedP50 = through.p50Ms - bare.p50Ms;
    const addedP99 = through.p99Ms - bare.p99Ms;
    return {
      name: 'mcp',
      rows: [bare, through],
      targets: [{ description: `an allowed tools/call through the gateway adds < ${TARGET_ADDED_P50_MS} ms at p50 over the same call made directly`, measured: `+${addedP50.toFixed(3)} ms at p50, +${addedP99.toFixed(3)} ms at p99`, pass: addedP50 < TARGET_ADDED_P50_MS }],
      notes: [
        `${ROUNDS} alternating rounds of ${CALLS} sequential calls per subject, one SDK client each (Streamable HTTP, JSON answers), after a warm-up round each; loopback; gateway on the embedded database.`,
        'The gateway authenticates each request, checks the tool against its pin (the session\'s listing, at most 30 s old), decides with a policy on the call\'s arguments, relays the JSON-RPC message on the agent session\'s own upstream session (the SDK\'s transports on both sides) and records the audit entry.',
      ],
    };
  } finally {
    await children.stopAll();
    process.off('exit', onExit);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
