/**
 * What metrics cost the hot paths (issue 36: the proxy and the PDP may not lose more than 5% of
 * their throughput to them): two gateways side by side in one run, as users start them, on one
 * PostgreSQL database as a deployment of several instances runs (each on an embedded database of
 * its own when PostgreSQL is unreachable):
 * - `metrics off`: no METRICS_PORT nor METRICS_TOKEN and SLOW_REQUEST_MS=0, so nothing at all is
 *   observed per request (no request observer, no gRPC interceptor, no decision metrics): the
 *   request path as it was before metrics existed;
 * - `metrics on`: METRICS_PORT set, SLOW_REQUEST_MS at its default, so every request is counted
 *   and timed and every decision counted, and `/metrics` is scraped once during each of its rounds
 *   (a Prometheus scraping every 15 s scrapes far less often).
 * Three parts: `GET /proxy/*` (autocannon, CONNECTIONS connections, to the bench upstream),
 * `POST /v1/check` and gRPC `Evaluate` (pdp.bench.ts's loads and calls). Each part: a warm-up of
 * each, then ROUNDS rounds of ROUND_SECONDS alternating which goes first, each once both audit
 * queues are empty; the target is judged on the ratio of the summed throughputs (the machine's
 * speed drifts within a minute: alternating cancels most of it, see proxy.bench.ts).
 *
 * `node dist/bench/run.js metrics` runs it alone. Environment: BENCH_METRICS_ROUNDS (6),
 * BENCH_METRICS_ROUND_SECONDS (3), BENCH_METRICS_WARMUP_SECONDS (2), BENCH_METRICS_PARTS
 * (proxy,check,unary), BENCH_METRICS_CONTROL, BENCH_POSTGRES_URL.
 */
import autocannon from 'autocannon';
import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkBody, PDP_BENCH_AGENT, PDP_BENCH_CALLS } from './fixtures/pdp-requests';
import { checkLoad, Gateway, pct, PdpStub, policyRequest, round3, startGateway, stub, sum, unaryLoad } from './pdp.bench';
import { ADMIN_TOKEN, createDatabase, dropDatabase, guardAgainstInterrupt, positiveNumber, POSTGRES_URL, redact, waitForAuditDrain } from './proxy.bench';
import { perRound, type BenchReport, type BenchRow, type BenchTarget } from './report';
import { ChildSet, cpuSeconds, freePort } from './servers/processes';

const SERVERS = path.join(__dirname, 'servers');
const ROUNDS = positiveNumber('BENCH_METRICS_ROUNDS', 6);
const ROUND_SECONDS = positiveNumber('BENCH_METRICS_ROUND_SECONDS', 3);
const WARMUP_SECONDS = positiveNumber('BENCH_METRICS_WARMUP_SECONDS', 2);
const CONNECTIONS = 50;
/** Throughput with metrics on, as a share of the same path without them (issue 36). */
const MIN_RATIO = 0.95;
const PROXIED_PATH = '/proxy/api/items?limit=10';
/** When, in a round of the `on` gateway, its /metrics is scraped. */
const SCRAPE_AFTER_MS = 1000;
/**
 * BENCH_METRICS_CONTROL=1: both gateways with metrics off (an A/A run), which shows how far two
 * identical gateways of this setup differ on this machine: the resolution of the on/off ratio.
 */
const CONTROL = process.env.BENCH_METRICS_CONTROL === '1';

const ALL_PARTS = ['proxy', 'check', 'unary'] as const;
type Part = (typeof ALL_PARTS)[number];
/** The parts to run (all unless BENCH_METRICS_PARTS names some). */
const PARTS = (process.env.BENCH_METRICS_PARTS ?? ALL_PARTS.join(',')).split(',').map((part) => part.trim());
type Which = 'off' | 'on';
type Load = (seconds: number) => Promise<{ completed: number; errors: number; firstError?: string }>;

interface Side {
  which: Which;
  gateway: Gateway;
  metricsUrl: string | null;
  /** Requests per second, round by round; and the server CPU seconds per answered request. */
  rounds: number[];
  cpuSeconds: number;
  completed: number;
  errors: number;
  firstError?: string;
}

interface PartResult {
  part: Part;
  off: Side;
  on: Side;
  scrapes: number;
  scrapeBytes: number;
}

/** The metrics benchmark: each hot path with metrics off and on, alternating, with the 5% target. */
export async function runMetricsBench(): Promise<BenchReport> {
  const children = new ChildSet();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-metrics-bench-'));
  let database: string | null = null;
  const releaseGuard = guardAgainstInterrupt('metrics', children, tmp, () => database);
  const notes: string[] = [];
  const clients: grpc.Client[] = [];
  try {
    const upstream = await children.fork('upstream', path.join(SERVERS, 'upstream.js'));
    const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
    database = await createDatabase().catch((error: unknown) => {
      notes.push(`PostgreSQL not reachable at ${redact(POSTGRES_URL)} (${error instanceof Error ? error.message : String(error)}): each gateway ran on an embedded database of its own.`);
      return null;
    });
    const sides: Side[] = [];
    for (const which of ['off', 'on'] as const) {
      const metricsPort = which === 'on' && !CONTROL ? await freePort() : null;
      const env = metricsPort !== null ? { UPSTREAM_URL: upstreamUrl, METRICS_PORT: String(metricsPort) } : { UPSTREAM_URL: upstreamUrl, SLOW_REQUEST_MS: '0' };
      const gateway = await startGateway(children, tmp, database, undefined, env, `gateway-metrics-${which}`);
      sides.push({ which, gateway, metricsUrl: metricsPort === null ? null : `http://127.0.0.1:${metricsPort}/metrics`, rounds: [], cpuSeconds: 0, completed: 0, errors: 0 });
    }
    const loads = new Map<Which, Record<Part, Load>>();
    for (const side of sides) {
      const { token, agentId, apiKey } = await provision(side.gateway.base);
      const client = stub(`127.0.0.1:${side.gateway.grpcPort}`);
      clients.push(client);
      loads.set(side.which, partLoads(side.gateway.base, client, token, agentId, apiKey));
    }
    const [off, on] = sides;
    const results: PartResult[] = [];
    for (const part of ALL_PARTS.filter((one) => PARTS.includes(one))) {
      results.push(await alternate(part, fresh(off), fresh(on), (side) => loads.get(side.which)![part]));
    }
    return {
      name: 'metrics',
      rows: results.flatMap(rowsOf),
      targets: results.map(targetOf),
      notes: [
        `Node ${process.version}; ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}); loopback; two gateways running side by side on one database, enforce mode, ` +
          '20 policies (bench/fixtures/policy-bench-set.ts), audit on.',
        'metrics off: no METRICS_PORT/METRICS_TOKEN and SLOW_REQUEST_MS=0 (nothing observed per request, as before metrics existed); ' +
          `metrics on: METRICS_PORT set, SLOW_REQUEST_MS default, /metrics scraped ${SCRAPE_AFTER_MS / 1000} s into each of its rounds.`,
        `Each part: ${WARMUP_SECONDS} s warm-up of each, then ${ROUNDS} alternating rounds of ${ROUND_SECONDS} s, each once both audit queues are empty. ` +
          `/proxy/* and /v1/check with autocannon (${CONNECTIONS} and 100 connections), gRPC Evaluate with 100 calls in flight on one channel (pdp.bench.ts).`,
        ...(CONTROL ? ['BENCH_METRICS_CONTROL=1: a control run, both gateways with metrics off; the `on` rows are the second gateway, the ratio the setup’s own spread.'] : []),
        ...notes,
      ],
    };
  } finally {
    for (const client of clients) client.close();
    await children.stopAll();
    releaseGuard();
    if (database !== null) await dropDatabase(database).catch((error: unknown) => console.error(`could not drop bench database ${database}:`, error));
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** The side with its counts of a previous part cleared. */
function fresh(side: Side): Side {
  return { ...side, rounds: [], cpuSeconds: 0, completed: 0, errors: 0, firstError: undefined };
}

function partLoads(base: string, client: PdpStub, token: string, agentId: string, apiKey: string): Record<Part, Load> {
  const metadata = new grpc.Metadata();
  metadata.set('x-api-key', apiKey);
  const requests = PDP_BENCH_CALLS.map((call) => policyRequest(agentId, call));
  const checkRequests = PDP_BENCH_CALLS.map((call) => ({
    method: 'POST' as const,
    path: '/v1/check',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify(checkBody(agentId, call)),
  }));
  return {
    proxy: (seconds) => proxyLoad(base, token, seconds),
    check: (seconds) => checkLoad(base, checkRequests, seconds, null),
    unary: (seconds) => unaryLoad(client, metadata, requests, seconds, null),
  };
}

/** autocannon, CONNECTIONS connections, the bench upstream's path through /proxy/* (allowed by the set). */
function proxyLoad(base: string, token: string, seconds: number): Promise<{ completed: number; errors: number; firstError?: string }> {
  return new Promise((resolve, reject) => {
    autocannon({ url: base + PROXIED_PATH, connections: CONNECTIONS, pipelining: 1, duration: seconds, headers: { authorization: `Bearer ${token}` } }, (error: unknown, result: autocannon.Result) => {
      if (error) reject(error instanceof Error ? error : new Error(String(error)));
      else resolve({ completed: result['2xx'], errors: result.non2xx + result.errors + result.timeouts, firstError: result.non2xx > 0 ? `${result.non2xx} non-2xx answers` : undefined });
    });
  });
}

/** Warm-up of each side, then ROUNDS rounds alternating which goes first, each once both audit queues are empty. */
async function alternate(part: Part, off: Side, on: Side, loadOf: (side: Side) => Load): Promise<PartResult> {
  const settle = async () => {
    for (const side of [off, on]) await waitForAuditDrain(side.gateway.base, side.gateway.child);
  };
  for (const side of [off, on]) {
    await settle();
    await loadOf(side)(WARMUP_SECONDS);
  }
  let scrapes = 0;
  let scrapeBytes = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? [off, on] : [on, off]) {
      await settle();
      const cpuBefore = cpuSeconds(side.gateway.child.process.pid);
      const started = performance.now();
      const scraped = side.metricsUrl === null ? null : scrapeDuring(side.metricsUrl);
      const { completed, errors, firstError } = await loadOf(side)(ROUND_SECONDS);
      const seconds = (performance.now() - started) / 1000;
      const cpuAfter = cpuSeconds(side.gateway.child.process.pid);
      if (scraped !== null) {
        scrapeBytes = Math.max(scrapeBytes, await scraped);
        scrapes++;
      }
      side.rounds.push(Math.round(completed / seconds));
      side.cpuSeconds += cpuBefore === null || cpuAfter === null ? 0 : cpuAfter - cpuBefore;
      side.completed += completed;
      side.errors += errors;
      side.firstError ??= firstError;
    }
  }
  return { part, off, on, scrapes, scrapeBytes };
}

/** One scrape of `/metrics`, SCRAPE_AFTER_MS into the round: the size of the exposition. */
async function scrapeDuring(url: string): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, SCRAPE_AFTER_MS));
  const response = await fetch(url);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${text.slice(0, 200)}`);
  return Buffer.byteLength(text);
}

/** The benchmark's agent (with its token, for /proxy/*) and an adapter API key, in the bootstrap organization. */
async function provision(base: string): Promise<{ token: string; agentId: string; apiKey: string }> {
  const agent = await adminPost<{ id?: string; token?: string }>(base, '/admin/agents', PDP_BENCH_AGENT);
  const key = await adminPost<{ key?: string }>(base, '/admin/api-keys', { name: 'metrics bench adapter' });
  if (typeof agent.id !== 'string' || typeof agent.token !== 'string' || typeof key.key !== 'string') throw new Error('POST /admin/agents or /admin/api-keys answered without an id, token or key');
  const sanity = await fetch(base + PROXIED_PATH, { headers: { authorization: `Bearer ${agent.token}` } });
  if (sanity.status !== 200) throw new Error(`${base}${PROXIED_PATH} answered ${sanity.status}: ${await sanity.text()}`);
  return { token: agent.token, agentId: agent.id, apiKey: key.key };
}

async function adminPost<T>(base: string, route: string, body: object): Promise<T> {
  const response = await fetch(base + route, { method: 'POST', headers: { 'x-admin-token': ADMIN_TOKEN, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const answer = (await response.json()) as T;
  if (response.status !== 201) throw new Error(`POST ${route} answered ${response.status}: ${JSON.stringify(answer)}`);
  return answer;
}

const LABELS: Record<Part, string> = { proxy: 'GET /proxy/*', check: 'POST /v1/check', unary: 'gRPC Evaluate' };

function rowsOf(result: PartResult): BenchRow[] {
  return [result.off, result.on].map((side) => ({
    subject: `${LABELS[result.part]}, metrics ${side.which}`,
    opsPerSec: Math.round(sum(side.rounds) / side.rounds.length),
    extra: {
      perRound: perRound(side.rounds),
      completed: side.completed,
      errors: side.errors,
      serverCpuUsPerOp: cpuPerOp(side),
      ...(side.which === 'on' ? { 'ops/off': round3(ratioOf(result)), scrapes: result.scrapes, scrapeBytes: result.scrapeBytes } : {}),
      ...(side.firstError === undefined ? {} : { firstError: side.firstError }),
    },
  }));
}

function targetOf(result: PartResult): BenchTarget {
  const ratio = ratioOf(result);
  const failed = result.on.errors + result.off.errors > 0;
  return {
    description: `${LABELS[result.part]} with metrics on: >= ${MIN_RATIO * 100}% of its throughput with metrics off`,
    measured:
      `${ROUNDS} alternating rounds of ${ROUND_SECONDS} s: ${sum(result.on.rounds).toLocaleString('en-US')} vs ${sum(result.off.rounds).toLocaleString('en-US')} ops/s summed = ${pct(ratio)} ` +
      `(rounds: ${result.on.rounds.map((ops, i) => pct(ops / result.off.rounds[i])).join(', ')}); server CPU per request ${cpuPerOp(result.on)} vs ${cpuPerOp(result.off)} µs` +
      `${failed ? `; errors: ${result.on.firstError ?? result.off.firstError ?? 'yes'}` : ''}`,
    pass: ratio >= MIN_RATIO && !failed,
  };
}

function ratioOf(result: PartResult): number {
  return sum(result.on.rounds) / sum(result.off.rounds);
}

function cpuPerOp(side: Side): number {
  return side.completed === 0 ? 0 : Math.round((side.cpuSeconds / side.completed) * 1e6 * 10) / 10;
}

if (require.main === module) {
  runMetricsBench()
    .then((report) => console.log(JSON.stringify(report, null, 2)))
    .catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
}
