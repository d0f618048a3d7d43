/**
 * Sustained load (`node dist/bench/run.js soak`, not in the default set): each entry point at
 * saturation for SOAK_MINUTES (5) after a SOAK_WARMUP_SECONDS (20) warm-up, one after the other,
 * each on a process of its own started as users start it:
 * - `/proxy/*` (gateway on PostgreSQL, 3 policies, an upstream answering ~100 bytes of JSON),
 * - `POST /v1/check`, gRPC `Evaluate` and `EvaluateStream` (gateway on PostgreSQL, the 20-policy set),
 * - sidecar `POST /enforce` (the built sidecar on a signed bundle; a stand-in gateway acknowledges its audit),
 * - MCP `tools/call` (gateway on PostgreSQL with one MCP server; SOAK_MCP_CLIENTS SDK clients in a loop).
 *
 * Throughput is counted per SOAK_INTERVAL_SECONDS (30) interval; RSS, heap used and event-loop
 * delay p99 are sampled inside the subject every SOAK_SAMPLE_SECONDS (10) (servers/process-stats.ts);
 * at the end the audit trail is checked for loss (entries >= decisions answered). Targets per
 * entry point: the last interval's throughput >= 90% of the first's, RSS grows by at most 64 MiB
 * from the first sample after warm-up to the last, no audit entry lost; and, as every bench,
 * the intervals' trend (report.ts). Besides bench/results/soak.json it writes
 * bench/results/soak.png (throughput and RSS over time per entry point, soak-chart.ts).
 * SOAK_ENTRY_POINTS (proxy,check,unary,stream,sidecar,mcp) picks some.
 */
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as grpc from '@grpc/grpc-js';
import autocannon from 'autocannon';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { checkBody, PDP_BENCH_CALLS } from './fixtures/pdp-requests';
import { checkLoad, policyRequest, provision, startGateway, streamLoad, stub, unaryLoad } from './pdp.bench';
import {
  ADMIN_TOKEN,
  auditDecisionCount,
  backendPids,
  createAgent,
  createDatabase,
  dropDatabase,
  guardAgainstInterrupt,
  POSTGRES_URL,
  PROXIED_PATH,
  PROXY_BENCH_POLICIES,
  waitForAuditDrain,
  withDatabase,
} from './proxy.bench';
import type { BenchReport, BenchRow, BenchTarget } from './report';
import { perRound } from './report';
import { startBenchSidecar } from './sidecar.bench';
import { soakChartPng } from './soak-chart';
import type { ProcessSample } from './servers/process-stats';
import { ChildSet, cpuSeconds, sleep } from './servers/processes';

const MINUTES = positive('SOAK_MINUTES', 5);
const WARMUP_SECONDS = positive('SOAK_WARMUP_SECONDS', 20);
const INTERVAL_SECONDS = positive('SOAK_INTERVAL_SECONDS', 30);
const SAMPLE_SECONDS = positive('SOAK_SAMPLE_SECONDS', 10);
const CONNECTIONS = 50;
const MCP_CLIENTS = positive('SOAK_MCP_CLIENTS', 16);
const MIN_LAST_OVER_FIRST = 0.9;
const MAX_RSS_GROWTH_MIB = 64;
const MIB = 2 ** 20;
const RESULTS_DIR = path.resolve(__dirname, '..', '..', 'bench', 'results');
const STATS_PRELOAD = path.join(__dirname, 'servers', 'process-stats.js');
const ENTRY_POINTS = ['proxy', 'check', 'unary', 'stream', 'sidecar', 'mcp'] as const;
type EntryPointName = (typeof ENTRY_POINTS)[number];
const CHOSEN = (process.env.SOAK_ENTRY_POINTS ?? ENTRY_POINTS.join(',')).split(',').map((name) => name.trim()) as EntryPointName[];

const LABELS: Record<EntryPointName, string> = {
  proxy: 'gateway GET /proxy/*',
  check: 'gateway POST /v1/check',
  unary: 'gateway gRPC Evaluate',
  stream: 'gateway gRPC EvaluateStream (1 stream)',
  sidecar: 'sidecar POST /enforce',
  mcp: 'gateway MCP tools/call',
};

const MCP_POLICIES = `policies:
  - name: orders
    match: { plugin: orders, function: lookup }
    rules:
      - condition: args.order starts_with "secret-"
        action: deny
        reason: Secret orders are off limits
`;

/** A started subject: how to load it for some seconds, and how to check its audit trail after. */
interface Subject {
  pid: number | undefined;
  /** Decisions answered before the soak (sanity checks), which the audit trail holds too. */
  answeredBefore: number;
  run(seconds: number): Promise<{ completed: number; errors: number }>;
  /** Once the load is over: entries in its audit trail, and entries dropped (sidecar). */
  audit(): Promise<{ entries: number; dropped: number; bytesPerEntry: number | null; postgresCpuUsPerEntry: number | null }>;
  stop(): Promise<void>;
}

interface Interval {
  atSeconds: number;
  opsPerSec: number;
  errors: number;
}

interface Soaked {
  name: EntryPointName;
  intervals: Interval[];
  samples: Array<ProcessSample & { atSeconds: number }>;
  answered: number;
  errors: number;
  cpuUsPerOp: number | null;
  audit: Awaited<ReturnType<Subject['audit']>>;
  loadAverage: number[];
}

export async function runSoakBench(): Promise<BenchReport> {
  const unknown = CHOSEN.filter((name) => !ENTRY_POINTS.includes(name));
  if (unknown.length > 0) throw new Error(`SOAK_ENTRY_POINTS names unknown entry points: ${unknown.join(', ')} (known: ${ENTRY_POINTS.join(', ')})`);
  const children = new ChildSet();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-soak-'));
  const databases: string[] = [];
  const releaseGuard = guardAgainstInterrupt('soak', children, tmp, () => databases[databases.length - 1] ?? null);
  const results: Soaked[] = [];
  try {
    for (const name of CHOSEN) {
      console.log(`soak: ${LABELS[name]} for ${MINUTES} min (load average ${os.loadavg().map((value) => value.toFixed(1)).join(' ')})`);
      const statsFile = path.join(tmp, `${name}-stats.jsonl`);
      const statsEnv = { NODE_OPTIONS: `--require ${STATS_PRELOAD}`, BENCH_STATS_FILE: statsFile, BENCH_STATS_INTERVAL_MS: String(SAMPLE_SECONDS * 1000) };
      const subject = await start(name, children, tmp, statsEnv, databases);
      try {
        results.push(await soak(name, subject, statsFile));
      } finally {
        await subject.stop();
      }
      const database = databases.pop();
      if (database !== undefined) await dropDatabase(database).catch((error: unknown) => console.error(`could not drop soak database ${database}:`, error));
    }
  } finally {
    await children.stopAll();
    releaseGuard();
    for (const database of databases) await dropDatabase(database).catch(() => undefined);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const chart = path.join(RESULTS_DIR, 'soak.png');
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  fs.writeFileSync(
    chart,
    soakChartPng(
      `Soak on Node ${process.version}: ${MINUTES} min per entry point, ${os.cpus().length} CPUs`,
      results.map((result) => ({
        title: LABELS[result.name],
        throughput: { label: `throughput per ${INTERVAL_SECONDS} s`, unit: 'ops/s', points: result.intervals.map((interval) => [interval.atSeconds, interval.opsPerSec] as const) },
        rss: { label: `RSS every ${SAMPLE_SECONDS} s`, unit: 'MiB', points: result.samples.map((sample) => [sample.atSeconds, sample.rssBytes / MIB] as const) },
      })),
    ),
  );
  return {
    name: 'soak',
    rows: results.map(rowOf),
    targets: results.flatMap(targetsOf),
    notes: [
      `Node ${process.version}; ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}); loopback; each entry point ${WARMUP_SECONDS} s warm-up then ${MINUTES} min at saturation ` +
        `(${CONNECTIONS} autocannon connections for /proxy/* and /enforce; for the PDP parts pdp.bench.ts's load, BENCH_PDP_IN_FLIGHT (100) connections, calls in flight on one channel or requests outstanding on one stream; ${MCP_CLIENTS} MCP SDK clients), ` +
        `throughput per ${INTERVAL_SECONDS} s, memory and event-loop delay sampled inside the subject every ${SAMPLE_SECONDS} s.`,
      `The load generator (this process) shares the cores with the subject, PostgreSQL and every other user of the machine; load average at each entry point's end: ${results.map((result) => `${result.name} ${result.loadAverage.map((value) => value.toFixed(1)).join('/')}`).join(', ')}.`,
      `Chart: ${path.relative(process.cwd(), chart)}.`,
    ],
    data: Object.fromEntries(results.map((result) => [result.name, { intervals: result.intervals, samples: result.samples, audit: result.audit }])),
  };
}

async function soak(name: EntryPointName, subject: Subject, statsFile: string): Promise<Soaked> {
  let answered = subject.answeredBefore;
  let errors = 0;
  const warm = await subject.run(WARMUP_SECONDS);
  answered += warm.completed;
  const soakStartMs = Date.now();
  const cpuBefore = cpuSeconds(subject.pid);
  const intervals: Interval[] = [];
  let soaked = 0;
  const intervalCount = Math.max(2, Math.round((MINUTES * 60) / INTERVAL_SECONDS));
  for (let index = 0; index < intervalCount; index++) {
    const started = performance.now();
    const { completed, errors: failed } = await subject.run(INTERVAL_SECONDS);
    const seconds = (performance.now() - started) / 1000;
    answered += completed;
    soaked += completed;
    errors += failed;
    intervals.push({ atSeconds: Math.round((Date.now() - soakStartMs) / 1000), opsPerSec: Math.round(completed / seconds), errors: failed });
    console.log(`  ${name} interval ${index + 1}/${intervalCount}: ${Math.round(completed / seconds)} ops/s`);
  }
  const cpuAfter = cpuSeconds(subject.pid);
  const samples = readSamples(statsFile, soakStartMs);
  const audit = await subject.audit();
  return {
    name,
    intervals,
    samples,
    answered,
    errors,
    cpuUsPerOp: cpuBefore === null || cpuAfter === null || soaked === 0 ? null : Math.round(((cpuAfter - cpuBefore) / soaked) * 1e6),
    audit,
    loadAverage: os.loadavg(),
  };
}

function readSamples(file: string, fromMs: number): Soaked['samples'] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as ProcessSample)
    .filter((sample) => sample.atMs >= fromMs)
    .map((sample) => ({ ...sample, atSeconds: Math.round((sample.atMs - fromMs) / 1000) }));
}

function rowOf(result: Soaked): BenchRow {
  const rss = result.samples.map((sample) => sample.rssBytes / MIB);
  const heap = result.samples.map((sample) => sample.heapUsedBytes / MIB);
  const ops = result.intervals.map((interval) => interval.opsPerSec);
  return {
    subject: `${LABELS[result.name]} (${MINUTES} min)`,
    opsPerSec: Math.round(ops.reduce((sum, value) => sum + value, 0) / ops.length),
    extra: {
      perRound: perRound(ops),
      'last/first': round3(ops[ops.length - 1] / ops[0]),
      answered: result.answered,
      errors: result.errors,
      ...(result.cpuUsPerOp === null ? {} : { cpuUsPerOp: result.cpuUsPerOp }),
      ...(rss.length === 0
        ? {}
        : {
            rssFirstMiB: round1(rss[0]),
            rssLastMiB: round1(rss[rss.length - 1]),
            rssPeakMiB: round1(Math.max(...rss)),
            heapFirstMiB: round1(heap[0]),
            heapLastMiB: round1(heap[heap.length - 1]),
            eventLoopP99MaxMs: round1(Math.max(...result.samples.map((sample) => sample.eventLoopDelayP99Ms))),
          }),
      auditEntries: result.audit.entries,
      ...(result.audit.bytesPerEntry === null ? {} : { auditBytesPerEntry: result.audit.bytesPerEntry }),
      ...(result.audit.postgresCpuUsPerEntry === null ? {} : { postgresCpuUsPerEntry: result.audit.postgresCpuUsPerEntry }),
    },
  };
}

function targetsOf(result: Soaked): BenchTarget[] {
  const label = LABELS[result.name];
  const ops = result.intervals.map((interval) => interval.opsPerSec);
  const lastOverFirst = ops[ops.length - 1] / ops[0];
  const rss = result.samples.map((sample) => sample.rssBytes / MIB);
  const growth = rss.length < 2 ? null : rss[rss.length - 1] - rss[0];
  const lost = result.answered - result.audit.entries;
  return [
    {
      description: `${label}: the last ${INTERVAL_SECONDS} s interval's throughput >= ${MIN_LAST_OVER_FIRST * 100}% of the first's`,
      measured: `${ops[ops.length - 1]} vs ${ops[0]} ops/s = ${(lastOverFirst * 100).toFixed(1)}% (intervals ${perRound(ops)})`,
      pass: lastOverFirst >= MIN_LAST_OVER_FIRST,
    },
    {
      description: `${label}: RSS grows by <= ${MAX_RSS_GROWTH_MIB} MiB after warm-up`,
      measured: growth === null ? 'fewer than 2 samples' : `${round1(rss[0])} -> ${round1(rss[rss.length - 1])} MiB (${growth >= 0 ? '+' : ''}${round1(growth)} MiB; peak ${round1(Math.max(...rss))} MiB)`,
      pass: growth !== null && growth <= MAX_RSS_GROWTH_MIB,
    },
    {
      description: `${label}: no audit entry lost (entries >= decisions answered, none dropped)`,
      measured: `${result.audit.entries.toLocaleString('en-US')} entries for ${result.answered.toLocaleString('en-US')} decisions answered; ${result.audit.dropped} dropped${lost > 0 ? `; ${lost} MISSING` : ''}`,
      pass: lost <= 0 && result.audit.dropped === 0,
    },
  ];
}

async function start(name: EntryPointName, children: ChildSet, tmp: string, statsEnv: NodeJS.ProcessEnv, databases: string[]): Promise<Subject> {
  if (name === 'sidecar') return startSidecar(children, tmp, statsEnv);
  const database = await createDatabase();
  databases.push(database);
  if (name === 'proxy') return startProxy(children, tmp, statsEnv, database);
  if (name === 'mcp') return startMcp(children, tmp, statsEnv, database);
  return startPdp(name, children, tmp, statsEnv, database);
}

async function startPdp(name: 'check' | 'unary' | 'stream', children: ChildSet, tmp: string, statsEnv: NodeJS.ProcessEnv, database: string): Promise<Subject> {
  const gateway = await startGateway(children, tmp, database, undefined, statsEnv, `gateway-${name}`);
  const { agentId, apiKey } = await provision(gateway.base);
  const metadata = new grpc.Metadata();
  metadata.set('x-api-key', apiKey);
  const client = stub(`127.0.0.1:${gateway.grpcPort}`);
  const requests = PDP_BENCH_CALLS.map((call) => policyRequest(agentId, call));
  const checkRequests = PDP_BENCH_CALLS.map((call) => ({ method: 'POST' as const, path: '/v1/check', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(checkBody(agentId, call)) }));
  const run = (seconds: number) =>
    name === 'check' ? checkLoad(gateway.base, checkRequests, seconds, null) : name === 'unary' ? unaryLoad(client, metadata, requests, seconds, null) : streamLoad(client, metadata, requests, seconds, null);
  return {
    pid: gateway.child.process.pid,
    answeredBefore: 0,
    run,
    audit: () => gatewayAudit(gateway.base, gateway.child, database),
    stop: async () => {
      client.close();
      await children.stop(gateway.child);
    },
  };
}

async function startProxy(children: ChildSet, tmp: string, statsEnv: NodeJS.ProcessEnv, database: string): Promise<Subject> {
  const upstream = await children.fork('upstream', path.join(__dirname, 'servers', 'upstream.js'));
  const policiesFile = path.join(tmp, 'proxy-policies.yaml');
  fs.writeFileSync(policiesFile, PROXY_BENCH_POLICIES);
  const gateway = await startGateway(children, tmp, database, undefined, { ...statsEnv, POLICIES_FILE: policiesFile, UPSTREAM_URL: `http://127.0.0.1:${upstream.port}`, PDP_GRPC_PORT: '0' }, 'gateway-proxy');
  const headers = { authorization: `Bearer ${await createAgent(gateway.base)}` };
  const sanity = await fetch(gateway.base + PROXIED_PATH, { headers });
  if (sanity.status !== 200) throw new Error(`/proxy/* answered ${sanity.status}: ${await sanity.text()}`);
  return {
    pid: gateway.child.process.pid,
    answeredBefore: 1,
    run: (seconds) => autocannonRun(gateway.base + PROXIED_PATH, { headers }, seconds),
    audit: () => gatewayAudit(gateway.base, gateway.child, database),
    stop: async () => {
      await children.stop(gateway.child);
      await children.stop(upstream.child);
    },
  };
}

async function startSidecar(children: ChildSet, tmp: string, statsEnv: NodeJS.ProcessEnv): Promise<Subject> {
  const sidecar = await startBenchSidecar(children, tmp, statsEnv);
  return {
    pid: sidecar.child.process.pid,
    answeredBefore: 1,
    run: (seconds) => autocannonRun(`${sidecar.url}/enforce`, { method: 'POST', headers: sidecar.headers, body: sidecar.body }, seconds),
    audit: async () => {
      const deadline = Date.now() + 180_000;
      let audit = { pendingEntries: -1, lastSeq: 0, dropped: 0 };
      while (Date.now() < deadline) {
        audit = ((await (await fetch(`${sidecar.url}/health`)).json()) as { audit: typeof audit }).audit;
        if (audit.pendingEntries === 0) break;
        await sleep(500);
      }
      // Entries are numbered from 1 in the sidecar's write-ahead log; every answer waited for its own.
      return { entries: audit.lastSeq, dropped: audit.dropped, bytesPerEntry: null, postgresCpuUsPerEntry: null };
    },
    stop: async () => {
      await children.stop(sidecar.child);
      await sidecar.close();
    },
  };
}

async function startMcp(children: ChildSet, tmp: string, statsEnv: NodeJS.ProcessEnv, database: string): Promise<Subject> {
  const upstream = await children.fork('mcp upstream', path.join(__dirname, 'servers', 'mcp-upstream.js'));
  const serversFile = path.join(tmp, 'mcp-servers.yaml');
  fs.writeFileSync(serversFile, `servers:\n  - name: orders\n    url: http://127.0.0.1:${upstream.port}/mcp\n`);
  const policiesFile = path.join(tmp, 'mcp-policies.yaml');
  fs.writeFileSync(policiesFile, MCP_POLICIES);
  const gateway = await startGateway(children, tmp, database, undefined, { ...statsEnv, POLICIES_FILE: policiesFile, MCP_SERVERS: serversFile, PDP_GRPC_PORT: '0' }, 'gateway-mcp');
  const created = await fetch(`${gateway.base}/admin/agents`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-admin-token': ADMIN_TOKEN },
    body: JSON.stringify({ name: 'soak-mcp', trustTier: 'verified' }),
  });
  const { token } = (await created.json()) as { token: string };
  const clients = await Promise.all(
    Array.from({ length: MCP_CLIENTS }, async () => {
      const mcp = new McpClient({ name: 'soak-agent', version: '1.0.0' });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${gateway.base}/mcp/orders`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      return mcp;
    }),
  );
  let call = 0;
  const run = async (seconds: number) => {
    const end = performance.now() + seconds * 1000;
    let completed = 0;
    let errors = 0;
    await Promise.all(
      clients.map(async (mcp) => {
        while (performance.now() < end) {
          try {
            await mcp.callTool({ name: 'lookup', arguments: { order: `ord-${call++ % 1000}` } });
            completed++;
          } catch {
            errors++;
          }
        }
      }),
    );
    return { completed, errors };
  };
  return {
    pid: gateway.child.process.pid,
    answeredBefore: 0,
    run,
    audit: () => gatewayAudit(gateway.base, gateway.child, database),
    stop: async () => {
      await Promise.all(clients.map((mcp) => mcp.close().catch(() => undefined)));
      await children.stop(gateway.child);
      await children.stop(upstream.child);
    },
  };
}

/** autocannon at CONNECTIONS connections; 2xx answers count as completed. */
async function autocannonRun(url: string, options: Partial<autocannon.Options>, seconds: number): Promise<{ completed: number; errors: number }> {
  const result = await autocannon({ url, connections: CONNECTIONS, pipelining: 1, duration: seconds, ...options });
  return { completed: result['2xx'], errors: result.non2xx + result.errors + result.timeouts };
}

/** The gateway's audit once its queue has drained: entries, bytes per entry in PostgreSQL, PostgreSQL CPU per entry over the soak. */
async function gatewayAudit(base: string, child: Parameters<typeof waitForAuditDrain>[1], database: string): Promise<Awaited<ReturnType<Subject['audit']>>> {
  await waitForAuditDrain(base, child);
  const entries = await auditDecisionCount(base);
  const client = new PgClient({ connectionString: withDatabase(POSTGRES_URL, database) });
  await client.connect();
  try {
    const { rows } = await client.query<{ bytes: string }>(
      `SELECT pg_total_relation_size('audit_entries'::regclass) + coalesce((SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits WHERE inhparent = 'audit_entries'::regclass), 0) AS bytes`,
    );
    const postgresCpu = (await backendPids(database)).map((pid) => cpuSeconds(pid) ?? 0).reduce((sum, value) => sum + value, 0);
    return { entries, dropped: 0, bytesPerEntry: entries === 0 ? null : Math.round(Number(rows[0].bytes) / entries), postgresCpuUsPerEntry: entries === 0 ? null : round1((postgresCpu / entries) * 1e6) };
  } finally {
    await client.end();
  }
}

function positive(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}
