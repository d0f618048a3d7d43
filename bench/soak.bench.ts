/**
 * Sustained load (`node dist/bench/run.js soak`, not in the default set): each entry point at
 * saturation for SOAK_MINUTES (5) after a SOAK_WARMUP_SECONDS (20) warm-up, one after the other,
 * each on a process of its own started as users start it, against the bare reference server its
 * ratio bench uses:
 * - `/proxy/*` (gateway on PostgreSQL, 3 policies, an upstream answering ~100 bytes of JSON) vs
 *   the bare undici reverse proxy (servers/bare-proxy.ts) to the same upstream,
 * - `POST /v1/check`, gRPC `Evaluate` and `EvaluateStream` (gateway on PostgreSQL, the 20-policy
 *   set) vs a bare node:http or grpc-js server answering the gateway's own answers
 *   (servers/bare-check-http.ts, servers/bare-pdp-grpc.ts),
 * - sidecar `POST /enforce` (the built sidecar on a signed bundle; a stand-in gateway acknowledges
 *   its audit) vs a bare node:http server answering as many bytes (servers/bare-json.ts),
 * - MCP `tools/call` (gateway on PostgreSQL with one MCP server; SOAK_MCP_CLIENTS SDK clients in a
 *   loop) vs the same clients calling that MCP server directly.
 *
 * A throughput alone cannot tell decay from the machine's other load, so before every
 * SOAK_INTERVAL_SECONDS (30) interval of the subject, and after the last, the reference runs for
 * SOAK_REFERENCE_SECONDS (10), each run starting once the subject's audit queue is empty, and each
 * interval is judged as its ratio to the mean of the reference's runs just before and after it.
 * Per interval the subject's CPU time (all its threads, /proc) per operation is taken too, its
 * audit work for that interval included (the queue drained before the clock stops), with the
 * CPU of the subject's PostgreSQL backends per operation and the time the drain took (how far the
 * audit trail lagged behind the answers). RSS, heap used and event-loop delay p99 are sampled
 * inside the subject every SOAK_SAMPLE_SECONDS (10) (servers/process-stats.ts); at the end the
 * audit trail is checked for loss (entries >= decisions answered).
 *
 * Targets per entry point: the last interval's ratio to its reference >= 90% of the first
 * interval's; its CPU per operation, over the reference's around it, <= 1.2x the first's (CPU
 * time per operation on this machine moves with its load for every process); RSS grows by at most 64 MiB from the
 * first sample after warm-up to the last; no audit entry lost; and, as every bench, the trend of
 * the intervals' ratios (report.ts). Besides bench/results/soak.json it writes
 * bench/results/soak.png (ratio, CPU per operation and RSS over time per entry point,
 * soak-chart.ts).
 *
 * SOAK_ENTRY_POINTS (proxy,check,unary,stream,sidecar,mcp) picks some. SOAK_CPU_PROFILE_DIR=<dir>
 * profiles the subject's main thread (servers/cpu-profile.ts, sampling every 200 µs) during its
 * first and its last interval, writes <dir>/<entry point>-first.cpuprofile and -last.cpuprofile,
 * and prints their difference in µs per operation (cpu-profile-diff.ts); both intervals are
 * slowed alike by the profiler.
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
import { diffProfiles, formatProfileDiff } from './cpu-profile-diff';
import { captureAnswers, checkLoad, pct, policyRequest, provision, startGateway, streamLoad, stub, unaryLoad } from './pdp.bench';
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
const REFERENCE_SECONDS = positive('SOAK_REFERENCE_SECONDS', 10);
const MIN_LAST_OVER_FIRST = 0.9;
const MAX_CPU_GROWTH = 1.2;
const MAX_RSS_GROWTH_MIB = 64;
const MIB = 2 ** 20;
const RESULTS_DIR = path.resolve(__dirname, '..', '..', 'bench', 'results');
const STATS_PRELOAD = path.join(__dirname, 'servers', 'process-stats.js');
const PROFILE_PRELOAD = path.join(__dirname, 'servers', 'cpu-profile.js');
const PROFILE_DIR = process.env.SOAK_CPU_PROFILE_DIR ? path.resolve(process.env.SOAK_CPU_PROFILE_DIR) : undefined;
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

const REFERENCE_LABELS: Record<EntryPointName, string> = {
  proxy: 'bare undici reverse proxy',
  check: 'bare node:http JSON server',
  unary: 'bare grpc-js Evaluate',
  stream: 'bare grpc-js EvaluateStream (1 stream)',
  sidecar: 'bare node:http JSON server',
  mcp: 'the MCP server called directly',
};

const MCP_POLICIES = `policies:
  - name: orders
    match: { plugin: orders, function: lookup }
    rules:
      - condition: args.order starts_with "secret-"
        action: deny
        reason: Secret orders are off limits
`;

type Load = (seconds: number) => Promise<{ completed: number; errors: number }>;

/** A started subject and its reference: how to load each for some seconds, and how to check the subject's audit trail after. */
interface Subject {
  pid: number | undefined;
  /** Decisions answered before the soak (sanity checks, captured answers), which the audit trail holds too. */
  answeredBefore: number;
  run: Load;
  /** Resolves once the subject's audit queue is empty: its work for the operations so far is done. */
  settle(): Promise<void>;
  reference: { pid: number | undefined; run: Load };
  /** The subject's PostgreSQL database (gateway subjects), whose backends' CPU is taken per interval. */
  database?: string;
  /** Once the load is over: entries in its audit trail, and entries dropped (sidecar). */
  audit(): Promise<{ entries: number; dropped: number; bytesPerEntry: number | null; postgresCpuUsPerEntry: number | null }>;
  stop(): Promise<void>;
}

interface Interval {
  atSeconds: number;
  opsPerSec: number;
  /** The mean of the reference's runs just before and just after the interval. */
  referenceOpsPerSec: number;
  /** opsPerSec / referenceOpsPerSec. */
  ratio: number;
  errors: number;
  /** Subject CPU time (all threads) per operation over the interval and its audit's draining, µs. */
  cpuUsPerOp: number | null;
  referenceCpuUsPerOp: number | null;
  /** PostgreSQL's CPU (the database's backends) per operation over the same span, gateway subjects. */
  postgresCpuUsPerOp?: number | null;
  /** How long the subject's audit queue took to drain once the interval's load ended. */
  auditDrainMs: number;
}

interface Profiled {
  first: string;
  last: string;
  ops: { first: number; last: number };
  diff: ReturnType<typeof diffProfiles>;
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
  profile: Profiled | null;
}

export async function runSoakBench(): Promise<BenchReport> {
  const unknown = CHOSEN.filter((name) => !ENTRY_POINTS.includes(name));
  if (unknown.length > 0) throw new Error(`SOAK_ENTRY_POINTS names unknown entry points: ${unknown.join(', ')} (known: ${ENTRY_POINTS.join(', ')})`);
  const children = new ChildSet();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-soak-'));
  const databases: string[] = [];
  const releaseGuard = guardAgainstInterrupt('soak', children, tmp, () => databases[databases.length - 1] ?? null);
  const results: Soaked[] = [];
  if (PROFILE_DIR) fs.mkdirSync(PROFILE_DIR, { recursive: true });
  try {
    for (const name of CHOSEN) {
      console.log(`soak: ${LABELS[name]} for ${MINUTES} min (load average ${os.loadavg().map((value) => value.toFixed(1)).join(' ')})`);
      const statsFile = path.join(tmp, `${name}-stats.jsonl`);
      const statsEnv: NodeJS.ProcessEnv = {
        NODE_OPTIONS: `--require ${STATS_PRELOAD}${PROFILE_DIR ? ` --require ${PROFILE_PRELOAD}` : ''}`,
        BENCH_STATS_FILE: statsFile,
        BENCH_STATS_INTERVAL_MS: String(SAMPLE_SECONDS * 1000),
        ...(PROFILE_DIR ? { BENCH_CPU_PROFILE_FILE: profilePath(name, 'current') } : {}),
      };
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
        panels: [
          { label: `ops/s over the reference's, per ${INTERVAL_SECONDS} s`, unit: '%', points: result.intervals.map((interval) => [interval.atSeconds, interval.ratio * 100] as const) },
          { label: 'CPU per operation', unit: 'µs', points: result.intervals.flatMap((interval) => (interval.cpuUsPerOp === null ? [] : [[interval.atSeconds, interval.cpuUsPerOp] as const])) },
          { label: `RSS every ${SAMPLE_SECONDS} s`, unit: 'MiB', points: result.samples.map((sample) => [sample.atSeconds, sample.rssBytes / MIB] as const) },
        ],
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
        `throughput per ${INTERVAL_SECONDS} s interval, each between two ${REFERENCE_SECONDS} s runs of the bare reference (${CHOSEN.map((name) => `${name}: ${REFERENCE_LABELS[name]}`).join('; ')}) and judged as the ratio to their mean; ` +
        `CPU per operation is the subject process's (all threads, audit worker included), its audit queue drained before the clock stops; memory and event-loop delay sampled inside the subject every ${SAMPLE_SECONDS} s.`,
      `The load generator (this process) shares the cores with the subject, PostgreSQL and every other user of the machine; load average at each entry point's end: ${results.map((result) => `${result.name} ${result.loadAverage.map((value) => value.toFixed(1)).join('/')}`).join(', ')}.`,
      `Chart: ${path.relative(process.cwd(), chart)}.`,
      ...results.flatMap((result) => (result.profile === null ? [] : [profileNote(result.name, result.profile)])),
    ],
    data: Object.fromEntries(
      results.map((result) => [result.name, { intervals: result.intervals, samples: result.samples, audit: result.audit, ...(result.profile === null ? {} : { profile: result.profile }) }]),
    ),
  };
}

async function soak(name: EntryPointName, subject: Subject, statsFile: string): Promise<Soaked> {
  let answered = subject.answeredBefore;
  let errors = 0;
  await subject.reference.run(Math.min(WARMUP_SECONDS, REFERENCE_SECONDS));
  await subject.settle();
  const warm = await subject.run(WARMUP_SECONDS);
  answered += warm.completed;
  const soakStartMs = Date.now();
  const intervals: Interval[] = [];
  let soaked = 0;
  let soakCpu: number | null = 0;
  const intervalCount = Math.max(2, Math.round((MINUTES * 60) / INTERVAL_SECONDS));
  const profiledOps = { first: 0, last: 0 };
  const referenceRun = () => measured(subject.reference.pid, () => subject.reference.run(REFERENCE_SECONDS));
  await subject.settle();
  let before = await referenceRun();
  for (let index = 0; index < intervalCount; index++) {
    const profiled = PROFILE_DIR !== undefined && (index === 0 || index === intervalCount - 1);
    if (profiled) startProfile(subject.pid, name);
    const load = await measured(subject.pid, () => subject.run(INTERVAL_SECONDS), {
      whenLoaded: profiled ? () => stopProfile(subject.pid, name, index === 0 ? 'first' : 'last') : undefined,
      after: () => subject.settle(),
      postgresCpu: subject.database === undefined ? undefined : () => postgresCpuSeconds(subject.database!),
    });
    if (profiled) profiledOps[index === 0 ? 'first' : 'last'] = load.completed;
    answered += load.completed;
    soaked += load.completed;
    errors += load.errors;
    soakCpu = soakCpu === null || load.cpuSeconds === null ? null : soakCpu + load.cpuSeconds;
    // The reference runs before and after each interval: the interval is judged against their
    // mean, so a change of the machine's load during it moves both sides.
    const after = await referenceRun();
    const referenceOps = (before.opsPerSec + after.opsPerSec) / 2;
    const referenceCpu = before.cpuSeconds === null || after.cpuSeconds === null ? null : before.cpuSeconds + after.cpuSeconds;
    const ratio = referenceOps === 0 ? 0 : load.opsPerSec / referenceOps;
    intervals.push({
      atSeconds: Math.round((Date.now() - soakStartMs) / 1000),
      opsPerSec: Math.round(load.opsPerSec),
      referenceOpsPerSec: Math.round(referenceOps),
      ratio: round3(ratio),
      errors: load.errors,
      cpuUsPerOp: usPerOp(load.cpuSeconds, load.completed),
      referenceCpuUsPerOp: usPerOp(referenceCpu, before.completed + after.completed),
      ...(load.postgresSeconds === null ? {} : { postgresCpuUsPerOp: usPerOp(load.postgresSeconds, load.completed) }),
      auditDrainMs: Math.round(load.drainMs),
    });
    before = after;
    const last = intervals[intervals.length - 1];
    console.log(
      `  ${name} interval ${index + 1}/${intervalCount}: ${last.opsPerSec} ops/s, reference ${last.referenceOpsPerSec} ops/s, ratio ${(ratio * 100).toFixed(1)}%, ` +
        `CPU ${last.cpuUsPerOp ?? '?'} µs/op (reference ${last.referenceCpuUsPerOp ?? '?'}${last.postgresCpuUsPerOp === undefined || last.postgresCpuUsPerOp === null ? '' : `, PostgreSQL ${last.postgresCpuUsPerOp}`}), ` +
        `audit drained in ${last.auditDrainMs} ms, load average ${os.loadavg()[0].toFixed(1)}`,
    );
  }
  const samples = readSamples(statsFile, soakStartMs);
  const audit = await subject.audit();
  let profile: Profiled | null = null;
  if (PROFILE_DIR !== undefined) {
    const first = profilePath(name, 'first');
    const last = profilePath(name, 'last');
    if (fs.existsSync(first) && fs.existsSync(last) && profiledOps.first > 0 && profiledOps.last > 0) {
      const diff = diffProfiles(first, last, profiledOps);
      console.log(`\n  ${name}: CPU profile, first interval against the last (${shown(first)}, ${shown(last)})\n`);
      console.log(formatProfileDiff(diff, { first: 'first', last: 'last' }).replace(/^/gm, '    '));
      profile = { first, last, ops: profiledOps, diff };
    }
  }
  return {
    name,
    intervals,
    samples,
    answered,
    errors,
    cpuUsPerOp: usPerOp(soakCpu, soaked),
    audit,
    loadAverage: os.loadavg(),
    profile,
  };
}

/**
 * One run of `load` with the CPU time `pid` spent on it, and PostgreSQL's (`postgresCpu`), from
 * its start until `after` (the subject's audit queue drained) resolved; `whenLoaded` runs as soon
 * as the load ends (stopping a profile), before `after`. `drainMs` is how long `after` took: the
 * audit trail's lag behind the answers at the load's end.
 */
async function measured(
  pid: number | undefined,
  load: () => Promise<{ completed: number; errors: number }>,
  options: { whenLoaded?: () => Promise<void>; after?: () => Promise<void>; postgresCpu?: () => Promise<Map<number, number>> } = {},
): Promise<{ completed: number; errors: number; opsPerSec: number; cpuSeconds: number | null; postgresSeconds: number | null; drainMs: number }> {
  const postgresBefore = await options.postgresCpu?.();
  const cpuBefore = cpuSeconds(pid);
  const started = performance.now();
  const { completed, errors } = await load();
  const seconds = (performance.now() - started) / 1000;
  await options.whenLoaded?.();
  const drainStarted = performance.now();
  await options.after?.();
  const drainMs = performance.now() - drainStarted;
  const cpuAfter = cpuSeconds(pid);
  const postgresAfter = await options.postgresCpu?.();
  return {
    completed,
    errors,
    opsPerSec: completed / seconds,
    cpuSeconds: cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore,
    postgresSeconds: postgresBefore === undefined || postgresAfter === undefined ? null : postgresCpuBetween(postgresBefore, postgresAfter),
    drainMs,
  };
}

/** CPU seconds used so far by each PostgreSQL backend connected to `database`, by pid. */
async function postgresCpuSeconds(database: string): Promise<Map<number, number>> {
  return new Map((await backendPids(database)).map((pid) => [pid, cpuSeconds(pid) ?? 0]));
}

/**
 * The backends' CPU between two readings: a backend that connected in between counts from zero,
 * one that ended in between is left out (its last seconds are not known), so never negative.
 */
function postgresCpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += Math.max(0, seconds - (before.get(pid) ?? 0));
  return total;
}

function usPerOp(cpu: number | null, ops: number): number | null {
  return cpu === null || ops === 0 ? null : Math.round((cpu / ops) * 1e6);
}

function profilePath(name: EntryPointName, which: 'current' | 'first' | 'last'): string {
  return path.join(PROFILE_DIR ?? os.tmpdir(), `${name}-${which}.cpuprofile`);
}

/** servers/cpu-profile.ts: an odd SIGUSR2 starts the subject's profiler. */
function startProfile(pid: number | undefined, name: EntryPointName): void {
  if (pid === undefined) return;
  fs.rmSync(profilePath(name, 'current'), { force: true });
  process.kill(pid, 'SIGUSR2');
}

/** An even SIGUSR2 stops it and writes the profile, which is kept as `<name>-<which>.cpuprofile`. */
async function stopProfile(pid: number | undefined, name: EntryPointName, which: 'first' | 'last'): Promise<void> {
  if (pid === undefined) return;
  const current = profilePath(name, 'current');
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 30_000;
  while (!fs.existsSync(current) && Date.now() < deadline) await sleep(100);
  if (!fs.existsSync(current)) {
    console.error(`  ${name}: the ${which} interval's CPU profile was not written`);
    return;
  }
  fs.renameSync(current, profilePath(name, which));
}

function profileNote(name: EntryPointName, profile: Profiled): string {
  const top = (rows: Profiled['diff']['topFirst']) => rows.slice(0, 8).map((row) => `${row.frame} ${row.first}/${row.last}`).join('; ');
  return (
    `${LABELS[name]}: CPU profile of the main thread, first interval (${profile.ops.first} ops) against the last (${profile.ops.last}), self µs per op first/last: ` +
    `busy ${profile.diff.busy.first}/${profile.diff.busy.last}; top of the last: ${top(profile.diff.topLast)}; largest changes: ${top(profile.diff.changed)} ` +
    `(node dist/bench/cpu-profile-diff.js ${shown(profile.first)} ${shown(profile.last)} --ops ${profile.ops.first},${profile.ops.last}).`
  );
}

/** A path relative to the working directory when it is inside it, else absolute. */
function shown(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative.startsWith('..') ? file : relative;
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
  const ratios = result.intervals.map((interval) => interval.ratio * 100);
  const cpu = cpuPerOps(result);
  return {
    subject: `${LABELS[result.name]} (${MINUTES} min)`,
    opsPerSec: Math.round(ops.reduce((sum, value) => sum + value, 0) / ops.length),
    extra: {
      // The intervals' ratios to the reference, in percent: what report.ts judges the trend on.
      perRound: perRound(ratios),
      opsPerRound: perRound(ops),
      referencePerRound: perRound(result.intervals.map((interval) => interval.referenceOpsPerSec)),
      'ratio last/first': round3(ratios[ratios.length - 1] / ratios[0]),
      ...(cpu === null
        ? {}
        : {
            cpuUsPerOpPerRound: perRound(cpu),
            referenceCpuUsPerOpPerRound: perRound(result.intervals.map((interval) => interval.referenceCpuUsPerOp ?? 0)),
            'cpu last/first': round3(cpu[cpu.length - 1] / cpu[0]),
            ...(relativeCpu(result) === null ? {} : { 'cpu/reference last/first': round3(relativeCpu(result)!.at(-1)! / relativeCpu(result)![0]) }),
          }),
      ...(result.intervals.every((interval) => typeof interval.postgresCpuUsPerOp === 'number')
        ? { postgresCpuUsPerOpPerRound: perRound(result.intervals.map((interval) => interval.postgresCpuUsPerOp ?? 0)) }
        : {}),
      auditDrainMsPerRound: perRound(result.intervals.map((interval) => interval.auditDrainMs)),
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

/** The intervals' CPU per operation, or null when /proc did not give it for every one. */
function cpuPerOps(result: Soaked): number[] | null {
  const cpu = result.intervals.map((interval) => interval.cpuUsPerOp);
  return cpu.every((value): value is number => value !== null && value > 0) ? cpu : null;
}

/**
 * The intervals' CPU per operation over the reference's around each: CPU time per operation on
 * this machine moves with its load for every process (the bare reference's by up to 1.7x within
 * a run), so the subject's own drift is judged against it.
 */
function relativeCpu(result: Soaked): number[] | null {
  const cpu = cpuPerOps(result);
  if (cpu === null || !result.intervals.every((interval) => interval.referenceCpuUsPerOp !== null && interval.referenceCpuUsPerOp > 0)) return null;
  return cpu.map((value, index) => value / result.intervals[index].referenceCpuUsPerOp!);
}

function targetsOf(result: Soaked): BenchTarget[] {
  const label = LABELS[result.name];
  const ratios = result.intervals.map((interval) => interval.ratio);
  const first = result.intervals[0];
  const last = result.intervals[result.intervals.length - 1];
  const lastOverFirst = last.ratio / first.ratio;
  const cpu = cpuPerOps(result);
  const relative = relativeCpu(result);
  const cpuGrowth = relative === null ? null : relative[relative.length - 1] / relative[0];
  const rss = result.samples.map((sample) => sample.rssBytes / MIB);
  const growth = rss.length < 2 ? null : rss[rss.length - 1] - rss[0];
  const lost = result.answered - result.audit.entries;
  return [
    {
      description: `${label}: the last ${INTERVAL_SECONDS} s interval's throughput over its reference's (${REFERENCE_LABELS[result.name]}) >= ${MIN_LAST_OVER_FIRST * 100}% of the first interval's`,
      measured:
        `${pct(last.ratio)} (${last.opsPerSec} vs ${last.referenceOpsPerSec} ops/s) against ${pct(first.ratio)} (${first.opsPerSec} vs ${first.referenceOpsPerSec}) = ${pct(lastOverFirst)} ` +
        `(ratios ${ratios.map(pct).join(', ')})`,
      pass: lastOverFirst >= MIN_LAST_OVER_FIRST,
    },
    {
      description: `${label}: CPU per operation in the last interval, over the reference's around it, <= ${MAX_CPU_GROWTH}x the first interval's`,
      measured:
        cpu === null || relative === null
          ? 'CPU time not available (/proc)'
          : `${cpu[cpu.length - 1]} µs (${relative[relative.length - 1].toFixed(2)}x the reference's ${result.intervals[result.intervals.length - 1].referenceCpuUsPerOp}) ` +
            `vs ${cpu[0]} µs (${relative[0].toFixed(2)}x its ${result.intervals[0].referenceCpuUsPerOp}) = ${cpuGrowth!.toFixed(2)}x; unscaled ${(cpu[cpu.length - 1] / cpu[0]).toFixed(2)}x ` +
            `(intervals ${perRound(cpu)}; the reference's ${perRound(result.intervals.map((interval) => interval.referenceCpuUsPerOp ?? 0))})`,
      pass: cpuGrowth !== null && cpuGrowth <= MAX_CPU_GROWTH,
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
  // The bare servers answer each call with the gateway's own answer to it (pdp.bench.ts).
  const answers = await captureAnswers(client, metadata, gateway.base, apiKey, agentId);
  const bare =
    name === 'check'
      ? await children.fork('bare node:http check', path.join(__dirname, 'servers', 'bare-check-http.js'), { BENCH_CHECK_ANSWERS: JSON.stringify(answers.check) })
      : await children.fork('bare grpc-js PDP', path.join(__dirname, 'servers', 'bare-pdp-grpc.js'), { BENCH_PDP_ANSWERS: JSON.stringify(answers.grpc) });
  const bareClient = name === 'check' ? null : stub(`127.0.0.1:${bare.port}`);
  const requests = PDP_BENCH_CALLS.map((call) => policyRequest(agentId, call));
  const checkRequests = PDP_BENCH_CALLS.map((call) => ({ method: 'POST' as const, path: '/v1/check', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(checkBody(agentId, call)) }));
  const load = (target: { origin: string; stub: ReturnType<typeof stub> | null }) => (seconds: number) =>
    name === 'check' ? checkLoad(target.origin, checkRequests, seconds, null) : name === 'unary' ? unaryLoad(target.stub!, metadata, requests, seconds, null) : streamLoad(target.stub!, metadata, requests, seconds, null);
  return {
    pid: gateway.child.process.pid,
    answeredBefore: answers.decisions,
    run: load({ origin: gateway.base, stub: client }),
    settle: () => waitForAuditDrain(gateway.base, gateway.child),
    reference: { pid: bare.child.process.pid, run: load({ origin: `http://127.0.0.1:${bare.port}`, stub: bareClient }) },
    database,
    audit: () => gatewayAudit(gateway.base, gateway.child, database),
    stop: async () => {
      client.close();
      bareClient?.close();
      await children.stop(bare.child);
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
  const bare = await children.fork('bare proxy', path.join(__dirname, 'servers', 'bare-proxy.js'), { UPSTREAM_URL: `http://127.0.0.1:${upstream.port}` });
  return {
    pid: gateway.child.process.pid,
    answeredBefore: 1,
    run: (seconds) => autocannonRun(gateway.base + PROXIED_PATH, { headers }, seconds),
    settle: () => waitForAuditDrain(gateway.base, gateway.child),
    reference: { pid: bare.child.process.pid, run: (seconds) => autocannonRun(`http://127.0.0.1:${bare.port}${PROXIED_PATH}`, { headers }, seconds) },
    database,
    audit: () => gatewayAudit(gateway.base, gateway.child, database),
    stop: async () => {
      await children.stop(bare.child);
      await children.stop(gateway.child);
      await children.stop(upstream.child);
    },
  };
}

async function startSidecar(children: ChildSet, tmp: string, statsEnv: NodeJS.ProcessEnv): Promise<Subject> {
  const sidecar = await startBenchSidecar(children, tmp, statsEnv);
  const bare = await children.fork('bare json server', path.join(__dirname, 'servers', 'bare-json.js'), { BODY_BYTES: String(Buffer.byteLength(sidecar.sampleText)) });
  const health = async () => (await sidecar.health()).audit;
  const drained = async () => {
    const deadline = Date.now() + 180_000;
    let audit = await health();
    while (audit.pendingEntries !== 0 && Date.now() < deadline) {
      await sleep(200);
      audit = await health();
    }
    return audit;
  };
  const request = { method: 'POST' as const, headers: sidecar.headers, body: sidecar.body };
  return {
    pid: sidecar.child.process.pid,
    answeredBefore: 1,
    run: (seconds) => autocannonRun(`${sidecar.url}/enforce`, request, seconds),
    settle: async () => {
      await drained();
    },
    reference: { pid: bare.child.process.pid, run: (seconds) => autocannonRun(`http://127.0.0.1:${bare.port}/enforce`, request, seconds) },
    audit: async () => {
      const audit = await drained();
      // Entries are numbered from 1 in the sidecar's write-ahead log; every answer waited for its own.
      return { entries: audit.lastSeq, dropped: audit.dropped, bytesPerEntry: null, postgresCpuUsPerEntry: null };
    },
    stop: async () => {
      await children.stop(bare.child);
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
  const clients = await mcpClients(`${gateway.base}/mcp/orders`, { authorization: `Bearer ${token}` });
  const direct = await mcpClients(`http://127.0.0.1:${upstream.port}/mcp`, {});
  return {
    pid: gateway.child.process.pid,
    answeredBefore: 0,
    run: (seconds) => mcpLoad(clients, seconds),
    settle: () => waitForAuditDrain(gateway.base, gateway.child),
    reference: { pid: upstream.child.process.pid, run: (seconds) => mcpLoad(direct, seconds) },
    database,
    audit: () => gatewayAudit(gateway.base, gateway.child, database),
    stop: async () => {
      await Promise.all([...clients, ...direct].map((mcp) => mcp.close().catch(() => undefined)));
      await children.stop(gateway.child);
      await children.stop(upstream.child);
    },
  };
}

/** MCP_CLIENTS SDK clients of one MCP endpoint. */
function mcpClients(url: string, headers: Record<string, string>): Promise<McpClient[]> {
  return Promise.all(
    Array.from({ length: MCP_CLIENTS }, async () => {
      const mcp = new McpClient({ name: 'soak-agent', version: '1.0.0' });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
      return mcp;
    }),
  );
}

let mcpCall = 0;

/** Each client calls `lookup` again as soon as its last call answered, for `seconds`. */
async function mcpLoad(clients: McpClient[], seconds: number): Promise<{ completed: number; errors: number }> {
  const end = performance.now() + seconds * 1000;
  let completed = 0;
  let errors = 0;
  await Promise.all(
    clients.map(async (mcp) => {
      while (performance.now() < end) {
        try {
          await mcp.callTool({ name: 'lookup', arguments: { order: `ord-${mcpCall++ % 1000}` } });
          completed++;
        } catch {
          errors++;
        }
      }
    }),
  );
  return { completed, errors };
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
