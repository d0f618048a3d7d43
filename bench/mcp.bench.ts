/**
 * The MCP gateway (docs/mcp.md): an allowed `tools/call` through the gateway's `/mcp/<name>`
 * against the same call made directly to the upstream MCP server, in one run, alternating rounds
 * of sequential calls from one SDK client each (target: under 1 ms added at p50). The gateway runs
 * on the embedded database with a policy that reads the call's arguments, pinning on, audit on.
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
  - name: orders
    match: { plugin: orders, function: lookup }
    rules:
      - condition: args.order starts_with "secret-"
        action: deny
        reason: Secret orders are off limits
`;

async function client(url: string, token?: string): Promise<Client> {
  const mcp = new Client({ name: 'bench-agent', version: '1.0.0' });
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  await mcp.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return mcp;
}

async function round(mcp: Client, samples: number[]): Promise<void> {
  for (let index = 0; index < CALLS; index++) {
    const started = process.hrtime.bigint();
    await mcp.callTool({ name: 'lookup', arguments: { order: `ord-${index}` } });
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
    const upstream = await children.fork('mcp upstream', path.join(__dirname, 'servers', 'mcp-upstream.js'));
    const upstreamUrl = `http://127.0.0.1:${upstream.port}/mcp`;
    fs.writeFileSync(path.join(tmp, 'servers.yaml'), `servers:\n  - name: orders\n    url: ${upstreamUrl}\n`);
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
    const governed = await client(`${url}/mcp/orders`, token);
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
    const bare = summary('tools/call directly to the upstream MCP server', directSamples);
    const through = summary('tools/call through the gateway (/mcp/orders: pin, policy, audit)', governedSamples);
    const addedP50 = through.p50Ms - bare.p50Ms;
    const addedP99 = through.p99Ms - bare.p99Ms;
    return {
      name: 'mcp',
      rows: [bare, through],
      targets: [{ description: `an allowed tools/call through the gateway adds < ${TARGET_ADDED_P50_MS} ms at p50 over the same call made directly`, measured: `+${addedP50.toFixed(3)} ms at p50, +${addedP99.toFixed(3)} ms at p99`, pass: addedP50 < TARGET_ADDED_P50_MS }],
      notes: [
        `${ROUNDS} alternating rounds of ${CALLS} sequential calls per subject, one SDK client each (Streamable HTTP, JSON answers), after a warm-up round each; loopback; gateway on the embedded database.`,
        'The gateway authenticates each request, checks the tool against its pin, decides with a policy on the call\'s arguments, forwards with its own SDK client and records the audit entry.',
      ],
    };
  } finally {
    await children.stopAll();
    process.off('exit', onExit);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
