/**
 * Governed proxy throughput and latency on loopback, against the same upstream in the same run:
 * the upstream alone, a bare undici reverse proxy (the Node.js ceiling), the gateway's /proxy/*
 * (as users start it, on PostgreSQL and on the embedded database) and nginx when installed.
 *
 * The load generator (autocannon) runs in this process; every server is its own child process.
 * Latency percentiles come from our own microsecond histogram of autocannon's per-response times
 * (autocannon's own histogram has 1 ms resolution). After each gateway run the audit queue is
 * drained and the audit entries are compared with every request sent to /proxy/*.
 *
 * Each subject is also measured with a single connection (one request at a time, no queueing),
 * which shows the latency a request adds by itself; under 50 saturating connections the p50 is
 * mostly queueing (Little's law: about connections / throughput).
 *
 * The throughput target is judged on alternating rounds: with the bare proxy and the gateway (on
 * PostgreSQL) both running, BENCH_PROXY_ROUNDS rounds of BENCH_PROXY_ROUND_SECONDS each, in the
 * order bare-gateway, gateway-bare, ..., each run once the gateway's audit queue is empty, and the
 * ratio of their summed throughput. This machine's
 * speed drifts by tens of percent within a minute (shared virtual CPUs), so two single runs taken
 * a minute apart compare the drift as much as the proxies; alternating cancels most of it. Eight
 * rounds by default: single rounds of one run have ranged from 44% to 64% of the bare proxy.
 *
 * The latency target is measured at a paced load (up to 50 connections, BENCH_PROXY_PACED_RATE
 * req/s started at an even pace, open loop), the same for every subject and below their
 * saturation, so it compares the time a request spends in each proxy rather than queueing.
 *
 * `node dist/bench/proxy.bench.js` runs it alone. Environment: BENCH_PROXY_SECONDS (10),
 * BENCH_PROXY_WARMUP_SECONDS (2), BENCH_PROXY_SINGLE_SECONDS (5), BENCH_PROXY_PACED_RATE (2000),
 * BENCH_PROXY_PACED_SECONDS (5), BENCH_PROXY_ROUNDS (8), BENCH_PROXY_ROUND_SECONDS (5),
 * BENCH_POSTGRES_URL (the URL of scripts/services.sh env),
 * BENCH_CPU_PROFILE_DIR (profile the gateway runs; slows them down, numbers not comparable).
 */
import autocannon from 'autocannon';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHistogram } from 'node:perf_hooks';
import { Client } from 'pg';
import { pacedLoad, PacedResult } from './paced-load';
import { perRound, type BenchReport, type BenchRow, type BenchTarget } from './report';
import { summarizeProfile } from './servers/cpu-profile';
import { ask, baseEnv, Child, ChildSet, cpuSeconds, freePort, sleep, waitForHttp } from './servers/processes';

const ROOT = path.resolve(__dirname, '..', '..');
const SERVERS = path.join(__dirname, 'servers');
const CONNECTIONS = 50;
const MEASURE_SECONDS = positiveNumber('BENCH_PROXY_SECONDS', 10);
const WARMUP_SECONDS = positiveNumber('BENCH_PROXY_WARMUP_SECONDS', 2);
const SINGLE_SECONDS = positiveNumber('BENCH_PROXY_SINGLE_SECONDS', 5);
/**
 * The latency target compares p50 at the same offered load, below what either proxy saturates at:
 * at full speed, 50 connections measure queueing (p50 ≈ connections / throughput), not the time a
 * request spends in the proxy.
 */
const PACED_RATE = positiveNumber('BENCH_PROXY_PACED_RATE', 2000);
const PACED_SECONDS = positiveNumber('BENCH_PROXY_PACED_SECONDS', 5);
const ROUNDS = positiveNumber('BENCH_PROXY_ROUNDS', 8);
const ROUND_SECONDS = positiveNumber('BENCH_PROXY_ROUND_SECONDS', 5);
export const POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://agentgov:agentgov@127.0.0.1:5432/postgres';
const PROFILE_DIR = process.env.BENCH_CPU_PROFILE_DIR;
export const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const UPSTREAM_PATH = '/api/items?limit=10';
export const PROXIED_PATH = `/proxy${UPSTREAM_PATH}`;
const AUDIT_DRAIN_TIMEOUT_MS = 180_000;
const MIN_THROUGHPUT_RATIO = 0.6;
const MAX_ADDED_P50_MS = 1;
/** otherCpu% (percent of one core) from which a run is reported as disturbed. */
const DISTURBED_OTHER_CPU_PCT = 25;

/** Two allow policies and one deny policy, all applicable to GET /proxy/api/items; none denies it. */
export const PROXY_BENCH_POLICIES = `policies:
  - name: bench-allow-verified-reads
    match: { action: "read:*" }
    rules:
      - name: verified-read
        condition: agent.trust_tier >= verified
        action: allow
        reason: Verified agents may read
  - name: bench-allow-api
    match: { plugin: http }
    rules:
      - name: api-get
        condition: args.path starts_with "/api/" and args.method == "GET"
        action: allow
        reason: API reads are allowed
  - name: bench-block-system-paths
    match: { action: "read:*" }
    rules:
      - name: system-paths
        condition: args.path starts_with "/etc" or args.path contains ".."
        action: deny
        reason: Access to system files blocked
`;

/** A run's counts and latencies (`sent`: requests written to the sockets, responded or not), and its CPU. */
interface Load extends PacedResult {
  timeouts: number;
  /** CPU used during the run, percent of one core (null where /proc is not available). */
  cpu: {
    /** The measured server process (the gateway's includes its threads, e.g. the PGlite worker). */
    server: number | null;
    /** The upstream, when it is not the measured server. */
    upstream: number | null;
    /** PostgreSQL backends serving the gateway. */
    postgres: number | null;
    /** This process: the load generator. */
    client: number;
    /** The whole machine (all cores: up to 100 x cores). */
    machine: number | null;
    /** The machine minus all of the above: other work competing for the cores. */
    other: number | null;
    /** Time the hypervisor gave to other guests. */
    steal: number | null;
  };
}

interface Subject {
  url: string;
  headers?: Record<string, string>;
  server: number | undefined;
  upstream?: number;
  /** PostgreSQL backend pids, asked before and after each run. */
  postgres?: () => Promise<number[]>;
}

interface Measured {
  warmup: Load;
  /** CONNECTIONS connections, as fast as the subject answers. */
  load: Load;
  /** One connection: one request at a time. */
  single: Load;
  /** CONNECTIONS connections sharing PACED_RATE requests per second. */
  paced: Load;
}

interface GatewayRun extends Measured {
  database: 'postgres' | 'embedded';
  /** Responses the client received from /proxy/* (sanity check, warm-up, measured runs). */
  proxiedCompleted: number;
  auditEntries: number;
  upstreamServed: number;
  auditDrainMs: number;
  startupMs: number;
  profile?: string[];
  /** Alternating rounds against the bare proxy: requests per second of each, round by round. */
  rounds?: { bare: number[]; gateway: number[] };
}

/** The proxy benchmark: rows for the upstream, the bare proxy, the gateway (PostgreSQL, embedded), nginx. */
export async function runProxyBench(): Promise<BenchReport> {
  const children = new ChildSet();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-bench-'));
  let database: string | null = null;
  const releaseGuard = guardAgainstInterrupt('proxy', children, tmp, () => database);
  const rows: BenchRow[] = [];
  const notes: string[] = [
    `Node ${process.version}; ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}); loopback; autocannon ${CONNECTIONS} connections, pipelining 1, ` +
      `GET ${PROXIED_PATH}; per subject ${WARMUP_SECONDS} s warm-up, ${MEASURE_SECONDS} s measured, then ${SINGLE_SECONDS} s with 1 connection (latency without queueing).`,
    'The load generator runs in the bench process; upstream, proxies, gateway (and PostgreSQL) are separate processes on the same machine, so they all share its cores.',
    'p50/p99 from a microsecond histogram of every response of the measured run. cpu% is percent of one core over the measured run: serverCpu% the measured server process ' +
      '(for the embedded database it includes the PGlite worker thread), postgresCpu% the PostgreSQL backends connected to the bench database, clientCpu% the load generator.',
  ];
  try {
    const started = await children.fork('upstream', path.join(SERVERS, 'upstream.js'));
    const upstream = started.child;
    const upstreamUrl = `http://127.0.0.1:${started.port}`;
    const upstreamAlone = await measure({ url: upstreamUrl + UPSTREAM_PATH, server: upstream.process.pid });
    rows.push(loadRow('upstream alone (node:http, ~100-byte JSON)', upstreamAlone.load));
    rows.push(loadRow('upstream alone, 1 connection', upstreamAlone.single));
    rows.push(loadRow(`upstream alone, paced ${PACED_RATE} req/s`, upstreamAlone.paced));

    const bare = await children.fork('bare proxy', path.join(SERVERS, 'bare-proxy.js'), { UPSTREAM_URL: upstreamUrl });
    const bareSubject: Subject = { url: `http://127.0.0.1:${bare.port}${PROXIED_PATH}`, server: bare.child.process.pid, upstream: upstream.process.pid };
    const bareRun = await measure(bareSubject);
    rows.push(loadRow('bare undici reverse proxy (node:http + undici Pool.stream)', bareRun.load));
    rows.push(loadRow('bare undici reverse proxy, 1 connection', bareRun.single));
    rows.push(loadRow(`bare undici reverse proxy, paced ${PACED_RATE} req/s`, bareRun.paced));

    const gatewayRuns: GatewayRun[] = [];
    database = await createDatabase().catch((error: unknown) => {
      notes.push(`PostgreSQL not reachable at ${redact(POSTGRES_URL)} (${error instanceof Error ? error.message : String(error)}): gateway measured on the embedded database only.`);
      return null;
    });
    if (database !== null) {
      gatewayRuns.push(await runGateway(children, upstream, upstreamUrl, tmp, database, bareSubject));
    }
    gatewayRuns.push(await runGateway(children, upstream, upstreamUrl, tmp, null, database === null ? bareSubject : undefined));
    await children.stop(bare.child);
    for (const run of gatewayRuns) rows.push(...gatewayRows(run, bareRun));

    rows.push(...(await runNginx(children, upstream, upstreamUrl, tmp, notes)));

    for (const run of gatewayRuns) {
      if (run.profile) notes.push(`gateway (${run.database}) CPU profile, top self time: ${run.profile.join('; ')}`);
    }
    if (PROFILE_DIR) notes.push('BENCH_CPU_PROFILE_DIR was set: the gateway runs were profiled (sampling every 200 µs), so their numbers are lower than usual.');
    const reference = gatewayRuns[0];
    return { name: 'proxy', rows, targets: targets(reference, bareRun), notes: [...notes, ...ratioNotes(gatewayRuns, bareRun, upstreamAlone), ...disturbanceNotes(rows)] };
  } finally {
    await children.stopAll();
    releaseGuard();
    if (database !== null) await dropDatabase(database).catch((error: unknown) => console.error(`could not drop bench database ${database}:`, error));
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** Warm-up, the measured run, then the single-connection run, against one subject. */
async function measure(subject: Subject, beforeMeasuredRun?: () => void): Promise<Measured> {
  const warmup = await load(subject, WARMUP_SECONDS, CONNECTIONS);
  beforeMeasuredRun?.();
  const measured = await load(subject, MEASURE_SECONDS, CONNECTIONS);
  const single = await load(subject, SINGLE_SECONDS, 1);
  const paced = await pacedRun(subject, PACED_SECONDS, PACED_RATE);
  return { warmup, load: measured, single, paced };
}

/** The paced open-loop load of bench/paced-load.ts against a subject, with the CPU it used. */
async function pacedRun(subject: Subject, seconds: number, ratePerSecond: number): Promise<Load> {
  const before = await cpuSnapshot(subject);
  const paced = await pacedLoad(subject.url, { method: 'GET', headers: subject.headers ?? {}, body: '' }, ratePerSecond, seconds, CONNECTIONS);
  const after = await cpuSnapshot(subject);
  return { ...paced, timeouts: 0, cpu: cpuUsed(before, after) };
}

async function load(subject: Subject, seconds: number, connections: number): Promise<Load> {
  const latencyUs = createHistogram();
  const before = await cpuSnapshot(subject);
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const options = { url: subject.url, connections, pipelining: 1, duration: seconds, headers: subject.headers };
    const instance = autocannon(options, (error: unknown, done: autocannon.Result) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(done)));
    instance.on('response', (_client, _status, _bytes, responseTime) => latencyUs.record(Math.max(1, Math.round(responseTime * 1000))));
  });
  const after = await cpuSnapshot(subject);
  const completed = result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx'];
  const ms = (percentile: number) => round3(latencyUs.percentile(percentile) / 1000);
  return {
    sent: result.requests.sent,
    completed,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    seconds: result.duration,
    opsPerSec: Math.round(completed / result.duration),
    p50Ms: ms(50),
    p90Ms: ms(90),
    p99Ms: ms(99),
    p999Ms: ms(99.9),
    cpu: cpuUsed(before, after),
  };
}

interface CpuSnapshot {
  wallNs: bigint;
  client: NodeJS.CpuUsage;
  server: number | null;
  upstream: number | null;
  postgres: Map<number, number> | null;
  machine: MachineTicks | null;
}

interface MachineTicks {
  busy: number;
  steal: number;
  total: number;
}

async function cpuSnapshot(subject: Subject): Promise<CpuSnapshot> {
  const postgres = subject.postgres ? new Map((await subject.postgres()).map((pid) => [pid, cpuSeconds(pid) ?? 0])) : null;
  return {
    wallNs: process.hrtime.bigint(),
    client: process.cpuUsage(),
    server: cpuSeconds(subject.server),
    upstream: subject.upstream === undefined ? null : cpuSeconds(subject.upstream),
    postgres,
    machine: machineTicks(),
  };
}

function cpuUsed(before: CpuSnapshot, after: CpuSnapshot): Load['cpu'] {
  const seconds = Number(after.wallNs - before.wallNs) / 1e9;
  const pct = (cpuSeconds: number) => Math.round((cpuSeconds / seconds) * 100);
  const delta = (a: number | null, b: number | null) => (a === null || b === null ? null : pct(b - a));
  let postgres: number | null = null;
  if (before.postgres !== null && after.postgres !== null) {
    let used = 0;
    for (const [pid, cpu] of after.postgres) used += cpu - (before.postgres.get(pid) ?? 0);
    postgres = pct(used);
  }
  const clientUs = after.client.user + after.client.system - before.client.user - before.client.system;
  const client = pct(clientUs / 1e6);
  let machine: number | null = null;
  let steal: number | null = null;
  if (before.machine !== null && after.machine !== null && after.machine.total > before.machine.total) {
    const cores = os.cpus().length;
    const share = (ticks: number) => Math.round((ticks / (after.machine!.total - before.machine!.total)) * cores * 100);
    machine = share(after.machine.busy - before.machine.busy);
    steal = share(after.machine.steal - before.machine.steal);
  }
  const server = delta(before.server, after.server);
  const upstream = delta(before.upstream, after.upstream);
  const other = machine === null ? null : Math.max(0, machine - client - (server ?? 0) - (upstream ?? 0) - (postgres ?? 0));
  return { server, upstream, postgres, client, machine, other, steal };
}

/** Machine-wide CPU ticks from /proc/stat (all cores). */
function machineTicks(): MachineTicks | null {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
    const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
    const busy = user + nice + system + irq + softirq;
    return { busy, steal, total: busy + idle + iowait + steal };
  } catch {
    return null;
  }
}

/** Starts the gateway like users do, creates an agent, loads /proxy/*, and counts its audit entries. */
async function runGateway(
  children: ChildSet,
  upstream: Child,
  upstreamUrl: string,
  tmp: string,
  postgresDatabase: string | null,
  alternateWith?: Subject,
): Promise<GatewayRun> {
  const database = postgresDatabase === null ? 'embedded' : 'postgres';
  const databaseEnv = postgresDatabase === null ? {} : { DATABASE_URL: withDatabase(POSTGRES_URL, postgresDatabase) };
  const dataDir = path.join(tmp, `gateway-${database}`);
  fs.mkdirSync(dataDir, { recursive: true });
  const policiesFile = path.join(tmp, 'bench-policies.yaml');
  fs.writeFileSync(policiesFile, PROXY_BENCH_POLICIES);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const profileFile = PROFILE_DIR ? path.resolve(PROFILE_DIR, `gateway-${database}-${Date.now()}.cpuprofile`) : undefined;
  const env: NodeJS.ProcessEnv = {
    ...baseEnv(),
    PORT: String(port),
    HOST: '127.0.0.1',
    PDP_GRPC_PORT: '0',
    MODE: 'enforce',
    ADMIN_TOKEN,
    DEFAULT_PLAN: 'enterprise',
    UPSTREAM_URL: upstreamUrl,
    POLICIES_FILE: policiesFile,
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    ...databaseEnv,
    ...(profileFile ? { BENCH_CPU_PROFILE_FILE: profileFile } : {}),
  };
  const nodeArgs = [...startScriptNodeFlags(), ...(profileFile ? ['--require', path.join(SERVERS, 'cpu-profile.js')] : [])];
  const bootStart = Date.now();
  const gateway = children.spawn(`gateway (${database})`, process.execPath, [...nodeArgs, path.join(ROOT, 'dist', 'src', 'main.js')], { cwd: ROOT, env });
  try {
    await waitForHttp(`${base}/health`, gateway, 120_000);
    const startupMs = Date.now() - bootStart;
    const token = await createAgent(base);
    const headers = { authorization: `Bearer ${token}` };
    await ask(upstream, { type: 'reset' });
    let proxiedCompleted = 0;
    const sanity = await fetch(base + PROXIED_PATH, { headers });
    proxiedCompleted++;
    const sanityBody = await sanity.text();
    if (sanity.status !== 200 || sanity.headers.get('x-service-decision') !== 'allow') {
      throw new Error(`gateway (${database}) did not allow the benchmarked request: HTTP ${sanity.status} ${sanity.headers.get('x-service-policy') ?? ''} ${sanityBody}`);
    }
    const subject: Subject = {
      url: base + PROXIED_PATH,
      headers,
      server: gateway.process.pid,
      upstream: upstream.process.pid,
      postgres: postgresDatabase === null ? undefined : () => backendPids(postgresDatabase),
    };
    // With BENCH_CPU_PROFILE_DIR, the profile covers the measured runs and the audit drain after them.
    const run = await measure(subject, profileFile ? () => gateway.process.kill('SIGUSR2') : undefined);
    // autocannon's `sent` over-counts paced runs, so the ground truth of what the gateway handled
    // is the upstream's own count (every benchmarked request is allowed and forwarded).
    proxiedCompleted += run.warmup.completed + run.load.completed + run.single.completed + run.paced.completed;
    const drainStart = Date.now();
    await waitForAuditDrain(base, gateway);
    const auditDrainMs = Date.now() - drainStart;
    const profile = profileFile ? await takeProfile(gateway, profileFile) : undefined;
    const auditEntries = await auditDecisionCount(base);
    const served = await ask(upstream, { type: 'count' });
    // After the audit count: these rounds' requests reach the upstream through both proxies.
    const rounds = alternateWith ? await alternate(alternateWith, subject, () => waitForAuditDrain(base, gateway)) : undefined;
    return {
      ...run,
      rounds,
      database,
      proxiedCompleted,
      auditEntries,
      upstreamServed: served.type === 'count' ? served.served : -1,
      auditDrainMs,
      startupMs,
      profile,
    };
  } finally {
    await children.stop(gateway);
  }
}

/**
 * ROUNDS rounds of ROUND_SECONDS for each subject, alternating which goes first, each once the
 * gateway's audit queue is empty (`settle`), so no run pays for the writing of an earlier
 * gateway run's entries (pdp.bench.ts's `alternate`).
 */
async function alternate(bare: Subject, gateway: Subject, settle: () => Promise<void>): Promise<{ bare: number[]; gateway: number[] }> {
  const rounds = { bare: [] as number[], gateway: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const order: Array<'bare' | 'gateway'> = round % 2 === 0 ? ['bare', 'gateway'] : ['gateway', 'bare'];
    for (const which of order) {
      await settle();
      rounds[which].push((await load(which === 'bare' ? bare : gateway, ROUND_SECONDS, CONNECTIONS)).opsPerSec);
    }
  }
  return rounds;
}

/** The node flags of `npm start` (package.json), so the gateway runs as users start it. */
export function startScriptNodeFlags(): string[] {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const words = pkg.scripts.start.split(/\s+/);
  const script = words.indexOf('dist/src/main.js');
  if (words[0] !== 'node' || script < 0) throw new Error(`npm start is not "node [flags] dist/src/main.js": ${pkg.scripts.start}`);
  return words.slice(1, script);
}

export async function createAgent(base: string): Promise<string> {
  const response = await fetch(`${base}/admin/agents`, {
    method: 'POST',
    headers: { 'x-admin-token': ADMIN_TOKEN, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench-agent', trustTier: 'verified', tags: ['bench'] }),
  });
  const body = (await response.json()) as { token?: string };
  if (response.status !== 201 && response.status !== 200) throw new Error(`POST /admin/agents answered ${response.status}: ${JSON.stringify(body)}`);
  if (typeof body.token !== 'string') throw new Error('POST /admin/agents returned no token');
  return body.token;
}

/** Waits until the gateway's audit queue is empty (every entry written). */
export async function waitForAuditDrain(base: string, gateway: Child): Promise<void> {
  const deadline = Date.now() + AUDIT_DRAIN_TIMEOUT_MS;
  let pending = -1;
  while (Date.now() < deadline) {
    if (gateway.process.exitCode !== null) throw new Error(`${gateway.name} exited\n${gateway.output()}`);
    const response = await fetch(`${base}/health`);
    pending = ((await response.json()) as { auditQueue: number }).auditQueue;
    if (pending === 0) return;
    await sleep(200);
  }
  throw new Error(`${gateway.name}: audit queue still holds ${pending} entries after ${AUDIT_DRAIN_TIMEOUT_MS} ms`);
}

export async function auditDecisionCount(base: string): Promise<number> {
  const response = await fetch(`${base}/admin/audit/stats`, { headers: { 'x-admin-token': ADMIN_TOKEN } });
  const body = (await response.json()) as { total?: number };
  if (response.status !== 200 || typeof body.total !== 'number') throw new Error(`GET /admin/audit/stats answered ${response.status}: ${JSON.stringify(body)}`);
  return body.total;
}

export async function takeProfile(gateway: Child, file: string): Promise<string[]> {
  gateway.process.kill('SIGUSR2');
  const deadline = Date.now() + 15_000;
  while (!fs.existsSync(file) && Date.now() < deadline) await sleep(100);
  if (!fs.existsSync(file)) return ['(profile not written)'];
  return summarizeProfile(file, 15).map((entry) => `${entry.percent}% ${entry.frame}`);
}

/** nginx as a reverse proxy to the same upstream (one worker), when it is installed. */
async function runNginx(children: ChildSet, upstream: Child, upstreamUrl: string, tmp: string, notes: string[]): Promise<BenchRow[]> {
  const found = spawnSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' });
  const binary = found.stdout.trim();
  if (found.status !== 0 || binary === '') {
    notes.push('nginx not installed: no nginx row.');
    return [];
  }
  const prefix = path.join(tmp, 'nginx');
  fs.mkdirSync(path.join(prefix, 'logs'), { recursive: true });
  const port = await freePort();
  const upstreamHost = new URL(upstreamUrl).host;
  fs.writeFileSync(
    path.join(prefix, 'nginx.conf'),
    `worker_processes 1;
daemon off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  upstream bench_upstream { server ${upstreamHost}; keepalive 256; }
  server {
    listen 127.0.0.1:${port};
    location /proxy/ {
      proxy_pass http://bench_upstream/;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`,
  );
  const nginx = children.spawn('nginx', binary, ['-p', prefix, '-c', path.join(prefix, 'nginx.conf')], { cwd: prefix });
  try {
    await waitForHttp(`http://127.0.0.1:${port}${PROXIED_PATH}`, nginx, 15_000);
    // nginx's worker is a child of its master: no per-process CPU for it, only the machine's.
    const run = await measure({ url: `http://127.0.0.1:${port}${PROXIED_PATH}`, server: undefined, upstream: upstream.process.pid });
    notes.push(`nginx: ${binary}, 1 worker process, keepalive upstream pool.`);
    return [loadRow('nginx reverse proxy (1 worker)', run.load), loadRow('nginx reverse proxy, 1 connection', run.single)];
  } finally {
    await children.stop(nginx, 5000);
  }
}

function loadRow(subject: string, load: Load, extra: Record<string, number | string> = {}): BenchRow {
  const cpu: Record<string, number> = {};
  const { server, upstream, postgres, client, machine, other, steal } = load.cpu;
  const serverUs = usPerRequest(server, load);
  const postgresUs = usPerRequest(postgres, load);
  if (server !== null) cpu['serverCpu%'] = server;
  if (serverUs !== null) cpu.serverCpuUsPerRequest = serverUs;
  if (upstream !== null) cpu['upstreamCpu%'] = upstream;
  if (postgres !== null) cpu['postgresCpu%'] = postgres;
  if (postgresUs !== null) cpu.postgresCpuUsPerRequest = postgresUs;
  cpu['clientCpu%'] = client;
  if (machine !== null) cpu['machineCpu%'] = machine;
  if (other !== null) cpu['otherCpu%'] = other;
  if (steal) cpu['steal%'] = steal;
  return {
    subject,
    opsPerSec: load.opsPerSec,
    p50Ms: load.p50Ms,
    p99Ms: load.p99Ms,
    extra: {
      p90Ms: load.p90Ms,
      'p99.9Ms': load.p999Ms,
      sent: load.sent,
      completed: load.completed,
      non2xx: load.non2xx,
      errors: load.errors,
      seconds: load.seconds,
      ...cpu,
      ...extra,
    },
  };
}

function gatewayRows(run: GatewayRun, bare: Measured): BenchRow[] {
  const label = run.database === 'postgres' ? 'PostgreSQL' : 'embedded PGlite';
  return [
    loadRow(`gateway /proxy/* (${label}; enforce, 3 policies, audit on)`, run.load, {
      ...(run.rounds ? { perRound: perRound(run.rounds.gateway), barePerRound: perRound(run.rounds.bare) } : {}),
      'ops/bare': round3(run.load.opsPerSec / bare.load.opsPerSec),
      'p50-bareP50Ms': round3(run.load.p50Ms - bare.load.p50Ms),
      proxiedResponses: run.proxiedCompleted,
      auditEntries: run.auditEntries,
      upstreamServed: run.upstreamServed,
      auditDrainMsAfterLoad: run.auditDrainMs,
      startupMs: run.startupMs,
    }),
    loadRow(`gateway (${label}), 1 connection`, run.single, { 'p50-bareP50Ms': round3(run.single.p50Ms - bare.single.p50Ms) }),
    loadRow(`gateway (${label}), paced ${PACED_RATE} req/s`, run.paced, { 'p50-bareP50Ms': round3(run.paced.p50Ms - bare.paced.p50Ms) }),
  ];
}

function targets(gateway: GatewayRun, bareRun: Measured): BenchTarget[] {
  const which = gateway.database === 'postgres' ? 'gateway on PostgreSQL' : 'gateway on the embedded database (PostgreSQL unavailable)';
  const bare = bareRun.load;
  const singleRatio = gateway.load.opsPerSec / bare.opsPerSec;
  const rounds = gateway.rounds;
  const ratio = rounds ? sum(rounds.gateway) / sum(rounds.bare) : singleRatio;
  const throughput = rounds
    ? `${ROUNDS} alternating rounds of ${ROUND_SECONDS} s: ${sum(rounds.gateway).toLocaleString('en-US')} vs ${sum(rounds.bare).toLocaleString('en-US')} req/s summed = ${(ratio * 100).toFixed(1)}% ` +
      `(rounds: ${rounds.gateway.map((ops, i) => pct(ops / rounds.bare[i])).join(', ')}; single ${MEASURE_SECONDS} s runs: ${(singleRatio * 100).toFixed(1)}%)`
    : `${gateway.load.opsPerSec.toLocaleString('en-US')} vs ${bare.opsPerSec.toLocaleString('en-US')} req/s = ${(ratio * 100).toFixed(1)}%`;
  const added = gateway.paced.p50Ms - bareRun.paced.p50Ms;
  const addedSaturated = gateway.load.p50Ms - bare.p50Ms;
  const addedAlone = gateway.single.p50Ms - bareRun.single.p50Ms;
  return [
    {
      description: `${which}: throughput >= ${MIN_THROUGHPUT_RATIO * 100}% of the bare undici proxy`,
      measured: throughput,
      pass: ratio >= MIN_THROUGHPUT_RATIO,
    },
    {
      description: `${which}: adds < ${MAX_ADDED_P50_MS} ms at p50 over the bare proxy (${CONNECTIONS} connections, both paced at ${PACED_RATE} req/s)`,
      measured:
        `${gateway.paced.p50Ms.toFixed(3)} - ${bareRun.paced.p50Ms.toFixed(3)} = ${added.toFixed(3)} ms ` +
        `(1 connection: ${signed(addedAlone)} ms; saturated, which measures queueing: ${signed(addedSaturated)} ms)`,
      pass: added < MAX_ADDED_P50_MS,
    },
    {
      description: `${which}: no audit entry lost (decision entries == requests the gateway forwarded, counted by the upstream; >= responses received)`,
      measured:
        `${gateway.auditEntries.toLocaleString('en-US')} entries; ${gateway.upstreamServed.toLocaleString('en-US')} requests reached the upstream; ` +
        `${gateway.proxiedCompleted.toLocaleString('en-US')} responses received (warm-up and sanity check included)`,
      pass: gateway.auditEntries === gateway.upstreamServed && gateway.auditEntries >= gateway.proxiedCompleted,
    },
  ];
}

function ratioNotes(runs: GatewayRun[], bare: Measured, upstream: Measured): string[] {
  const notes = [
    `bare proxy / upstream alone: ${pct(bare.load.opsPerSec / upstream.load.opsPerSec)} throughput, p50 ${signed(bare.load.p50Ms - upstream.load.p50Ms)} ms; ` +
      `1 connection: p50 ${signed(bare.single.p50Ms - upstream.single.p50Ms)} ms.`,
  ];
  for (const run of runs) {
    notes.push(
      `gateway (${run.database}) / bare proxy: ${pct(run.load.opsPerSec / bare.load.opsPerSec)} throughput, p50 ${signed(run.load.p50Ms - bare.load.p50Ms)} ms, ` +
        `p99 ${signed(run.load.p99Ms - bare.load.p99Ms)} ms; 1 connection: p50 ${signed(run.single.p50Ms - bare.single.p50Ms)} ms, p99 ${signed(run.single.p99Ms - bare.single.p99Ms)} ms; ` +
        `audit ${run.auditEntries} entries / ${run.upstreamServed} requests forwarded${run.auditEntries === run.upstreamServed ? ' (none lost)' : ` (DIFFERENCE ${run.auditEntries - run.upstreamServed})`}; ` +
        `queue drained ${run.auditDrainMs} ms after the load stopped; started in ${run.startupMs} ms.`,
    );
    const gatewayUs = usPerRequest(run.load.cpu.server, run.load);
    const postgresUs = usPerRequest(run.load.cpu.postgres, run.load);
    const bareUs = usPerRequest(bare.load.cpu.server, bare.load);
    if (gatewayUs !== null && bareUs !== null) {
      // Less sensitive to other load on the machine than throughput: what each request costs.
      notes.push(
        `gateway (${run.database}) CPU per request: ${gatewayUs} µs in the gateway process${postgresUs === null ? '' : ` + ${postgresUs} µs in PostgreSQL`} ` +
          `vs ${bareUs} µs in the bare proxy: ${(gatewayUs / bareUs).toFixed(2)}x (when both are bound by one core, and nothing else competes, the throughput ratio tends to ${pct(bareUs / gatewayUs)}).`,
      );
    }
  }
  return notes;
}

/** Runs during which other processes used a noticeable share of the cores: their numbers are suspect. */
function disturbanceNotes(rows: BenchRow[]): string[] {
  const disturbed = rows.filter((row) => Number(row.extra?.['otherCpu%'] ?? 0) >= DISTURBED_OTHER_CPU_PCT || Number(row.extra?.['steal%'] ?? 0) >= DISTURBED_OTHER_CPU_PCT);
  if (disturbed.length === 0) return [];
  return [
    `DISTURBED: other processes used >= ${DISTURBED_OTHER_CPU_PCT}% of a core during ${disturbed
      .map((row) => `"${row.subject}" (other ${row.extra?.['otherCpu%']}%${row.extra?.['steal%'] ? `, steal ${row.extra['steal%']}%` : ''})`)
      .join(', ')}: throughput and latency of these rows are understated; re-run on a quiet machine.`,
  ];
}

function usPerRequest(cpuPct: number | null, load: Load): number | null {
  return cpuPct === null || load.opsPerSec === 0 ? null : Math.round((cpuPct / 100 / load.opsPerSec) * 1e6);
}

/** PostgreSQL backends connected to `database` (their CPU is read from /proc: same machine only). */
export async function backendPids(database: string): Promise<number[]> {
  const rows = await withAdminClient((client) => client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [database]));
  return rows.rows.map((row) => row.pid);
}

export async function createDatabase(): Promise<string> {
  const name = `agentgov_bench_${Date.now()}`;
  await withAdminClient((client) => client.query(`CREATE DATABASE ${name}`));
  return name;
}

export async function dropDatabase(name: string): Promise<void> {
  await withAdminClient((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/** Runs `work` on a connection to the server's maintenance database (creating and dropping bench databases). */
/**
 * Until the returned release is called: on exit the child processes are killed; on SIGINT or
 * SIGTERM also the temporary directory and the bench database (`database()`, when made) go,
 * within 5 s, and the process exits 130.
 */
export function guardAgainstInterrupt(bench: string, children: ChildSet, tmp: string, database: () => string | null): () => void {
  const onExit = () => children.killAllNow();
  const onSignal = (signal: NodeJS.Signals) => {
    children.killAllNow();
    fs.rmSync(tmp, { recursive: true, force: true });
    process.stderr.write(`\n${bench} bench interrupted (${signal}); child processes killed\n`);
    const name = database();
    const dropped = name === null ? Promise.resolve() : dropDatabase(name);
    const timeout = new Promise((resolve) => setTimeout(resolve, 5000));
    void Promise.race([dropped, timeout])
      .catch(() => process.stderr.write(`could not drop bench database ${name}\n`))
      .finally(() => process.exit(130));
  };
  process.on('exit', onExit);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return () => {
    process.off('exit', onExit);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}

export async function withAdminClient<T>(work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

export function redact(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

export function positiveNumber(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

function pct(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

function signed(value: number): string {
  return `${value >= 0 ? '+' : ''}${value.toFixed(3)}`;
}

if (require.main === module) {
  runProxyBench()
    .then((report) => console.log(JSON.stringify(report, null, 2)))
    .catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
}
