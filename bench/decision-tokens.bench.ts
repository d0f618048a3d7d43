/**
 * What decision tokens and credential injection cost the governed proxy (issue 47: the proxy's
 * throughput with them on falls by at most a tenth): two gateways side by side in one run, as
 * users start them, each on a PostgreSQL database of its own on one server, so only the `on`
 * gateway holds a credential (each on an embedded database of its own when PostgreSQL is unreachable):
 * - `tokens off`: DECISION_TOKENS=false and no upstream credential: the request path without either;
 * - `tokens on`: DECISION_TOKENS=true (every allowed request gets X-Service-Decision-Token, signed
 *   per turn over a Merkle root, docs/security.md) and a header credential for the benchmarked
 *   route, injected into every forwarded request.
 * `GET /proxy/*` with autocannon (CONNECTIONS connections) to the bench upstream: a warm-up of
 * each, then ROUNDS rounds of ROUND_SECONDS alternating which goes first, each once both audit
 * queues are empty; the target is judged on the ratio of the summed throughputs (the machine's
 * speed drifts within a minute: alternating cancels most of it, see proxy.bench.ts).
 *
 * `node dist/bench/run.js decision-tokens` runs it alone. Environment: BENCH_TOKENS_ROUNDS (8),
 * BENCH_TOKENS_ROUND_SECONDS (4), BENCH_TOKENS_WARMUP_SECONDS (2), BENCH_POSTGRES_URL,
 * BENCH_CPU_PROFILE_DIR (profiles the `on` gateway over its rounds and lists the top self time;
 * slows it down, so the ratio of such a run is not the measurement), BENCH_TOKENS_CONTROL=1
 * (both gateways with tokens off: the setup's own spread).
 */
import autocannon from 'autocannon';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Gateway, pct, round3, startGateway, sum } from './pdp.bench';
import { ADMIN_TOKEN, createAgent, createDatabase, dropDatabase, guardAgainstInterrupt, positiveNumber, POSTGRES_URL, redact, takeProfile, waitForAuditDrain } from './proxy.bench';
import { perRound, type BenchReport, type BenchRow, type BenchTarget } from './report';
import { ChildSet, cpuSeconds } from './servers/processes';

const SERVERS = path.join(__dirname, 'servers');
const ROUNDS = positiveNumber('BENCH_TOKENS_ROUNDS', 8);
const ROUND_SECONDS = positiveNumber('BENCH_TOKENS_ROUND_SECONDS', 4);
const WARMUP_SECONDS = positiveNumber('BENCH_TOKENS_WARMUP_SECONDS', 2);
const PROFILE_DIR = process.env.BENCH_CPU_PROFILE_DIR;
const CONTROL = process.env.BENCH_TOKENS_CONTROL === '1';
const CONNECTIONS = 50;
/** Throughput with decision tokens and injection on, as a share of the same path without (issue 47). */
const MIN_RATIO = 0.9;
const PROXIED_PATH = '/proxy/api/items?limit=10';

type Which = 'off' | 'on';

interface Side {
  which: Which;
  gateway: Gateway;
  token: string;
  /** Requests per second, round by round. */
  rounds: number[];
  cpuSeconds: number;
  completed: number;
  errors: number;
  firstError?: string;
}

export async function runDecisionTokensBench(): Promise<BenchReport> {
  const children = new ChildSet();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-tokens-bench-'));
  const databases: string[] = [];
  const releaseGuard = guardAgainstInterrupt('decision-tokens', children, tmp, () => databases[0] ?? null);
  const notes: string[] = [];
  try {
    const upstream = await children.fork('upstream', path.join(SERVERS, 'upstream.js'));
    const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
    const database = async (): Promise<string | null> => {
      const made = await createDatabase().catch((error: unknown) => {
        notes.push(`PostgreSQL not reachable at ${redact(POSTGRES_URL)} (${error instanceof Error ? error.message : String(error)}): the gateway ran on an embedded database of its own.`);
        return null;
      });
      if (made !== null) databases.push(made);
      return made;
    };
    const keyFile = path.join(tmp, 'credentials.key');
    fs.writeFileSync(keyFile, randomBytes(32).toString('base64'));
    const profileFile = PROFILE_DIR ? path.resolve(PROFILE_DIR, `gateway-tokens-on-${Date.now()}.cpuprofile`) : undefined;
    const sides: Side[] = [];
    for (const which of ['off', 'on'] as const) {
      const on = which === 'on' && !CONTROL;
      const env = { UPSTREAM_URL: upstreamUrl, DECISION_TOKENS: String(on), CREDENTIALS_KEY_FILE: keyFile };
      const gateway = await startGateway(children, tmp, await database(), which === 'on' ? profileFile : undefined, env, `gateway-tokens-${which}`);
      const token = await createAgent(gateway.base);
      if (on) await storeCredential(gateway.base);
      sides.push({ which, gateway, token, rounds: [], cpuSeconds: 0, completed: 0, errors: 0 });
    }
    const [off, on] = sides;
    await alternate(off, on, profileFile);
    const profile = profileFile ? await takeProfile(on.gateway.child, profileFile) : [];
    return {
      name: 'decision-tokens',
      rows: [off, on].map((side) => rowOf(side, off, on)),
      targets: [targetOf(off, on)],
      notes: [
        `Node ${process.version}; ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}); loopback; two gateways side by side, each on its own database, enforce mode, 20 policies (bench/fixtures/policy-bench-set.ts), audit on.`,
        'tokens off: DECISION_TOKENS=false; tokens on: DECISION_TOKENS=true and a header credential for /proxy/api injected into every forwarded request.',
        `${WARMUP_SECONDS} s warm-up of each, then ${ROUNDS} alternating rounds of ${ROUND_SECONDS} s, each once both audit queues are empty; autocannon, ${CONNECTIONS} connections.`,
        ...(CONTROL ? ['BENCH_TOKENS_CONTROL=1: a control run, both gateways with tokens off; the ratio is the setup’s own spread.'] : []),
        ...(profileFile ? [`BENCH_CPU_PROFILE_DIR: the \`on\` gateway was profiled over its rounds (its numbers are lower than usual); top self time: ${profile.join('; ')}`] : []),
        ...notes,
      ],
    };
  } finally {
    await children.stopAll();
    releaseGuard();
    for (const name of databases) await dropDatabase(name).catch((error: unknown) => console.error(`could not drop bench database ${name}:`, error));
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** A header credential for the benchmarked route, as an admin stores one. */
async function storeCredential(base: string): Promise<void> {
  const response = await fetch(`${base}/admin/credentials`, {
    method: 'POST',
    headers: { 'x-admin-token': ADMIN_TOKEN, 'content-type': 'application/json' },
    body: JSON.stringify({ route: '/proxy/api', type: 'header', name: 'X-Api-Key', value: `sk_bench_${randomBytes(16).toString('hex')}` }),
  });
  if (response.status !== 201 && response.status !== 409) throw new Error(`POST /admin/credentials answered ${response.status}: ${await response.text()}`);
}

function proxyLoad(base: string, token: string, seconds: number): Promise<{ completed: number; errors: number; firstError?: string }> {
  return new Promise((resolve, reject) => {
    autocannon({ url: base + PROXIED_PATH, connections: CONNECTIONS, pipelining: 1, duration: seconds, headers: { authorization: `Bearer ${token}` } }, (error: unknown, result: autocannon.Result) => {
      if (error) reject(error instanceof Error ? error : new Error(String(error)));
      else resolve({ completed: result['2xx'], errors: result.non2xx + result.errors + result.timeouts, firstError: result.non2xx > 0 ? `${result.non2xx} non-2xx answers` : undefined });
    });
  });
}

/** Warm-up of each side, then ROUNDS rounds alternating which goes first, each once both audit queues are empty. */
async function alternate(off: Side, on: Side, profileFile: string | undefined): Promise<void> {
  const settle = async () => {
    for (const side of [off, on]) await waitForAuditDrain(side.gateway.base, side.gateway.child);
  };
  for (const side of [off, on]) {
    await settle();
    await proxyLoad(side.gateway.base, side.token, WARMUP_SECONDS);
  }
  // The first SIGUSR2 starts the profiler (bench/servers/cpu-profile.ts), takeProfile's stops it.
  if (profileFile) on.gateway.child.process.kill('SIGUSR2');
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? [off, on] : [on, off]) {
      await settle();
      const cpuBefore = cpuSeconds(side.gateway.child.process.pid);
      const started = performance.now();
      const { completed, errors, firstError } = await proxyLoad(side.gateway.base, side.token, ROUND_SECONDS);
      const seconds = (performance.now() - started) / 1000;
      const cpuAfter = cpuSeconds(side.gateway.child.process.pid);
      side.rounds.push(Math.round(completed / seconds));
      side.cpuSeconds += cpuBefore === null || cpuAfter === null ? 0 : cpuAfter - cpuBefore;
      side.completed += completed;
      side.errors += errors;
      side.firstError ??= firstError;
    }
  }
}

function rowOf(side: Side, off: Side, on: Side): BenchRow {
  return {
    subject: `GET /proxy/*, decision tokens ${side.which}`,
    opsPerSec: Math.round(sum(side.rounds) / side.rounds.length),
    extra: {
      perRound: perRound(side.rounds),
      completed: side.completed,
      errors: side.errors,
      serverCpuUsPerOp: cpuPerOp(side),
      ...(side.which === 'on' ? { 'ops/off': round3(sum(on.rounds) / sum(off.rounds)) } : {}),
      ...(side.firstError === undefined ? {} : { firstError: side.firstError }),
    },
  };
}

function targetOf(off: Side, on: Side): BenchTarget {
  const ratio = sum(on.rounds) / sum(off.rounds);
  const failed = on.errors + off.errors > 0;
  return {
    description: `GET /proxy/* with decision tokens and credential injection on: >= ${MIN_RATIO * 100}% of its throughput with them off`,
    measured:
      `${ROUNDS} alternating rounds of ${ROUND_SECONDS} s: ${sum(on.rounds).toLocaleString('en-US')} vs ${sum(off.rounds).toLocaleString('en-US')} ops/s summed = ${pct(ratio)} ` +
      `(rounds: ${on.rounds.map((ops, i) => pct(ops / off.rounds[i])).join(', ')}); server CPU per request ${cpuPerOp(on)} vs ${cpuPerOp(off)} µs` +
      `${failed ? `; errors: ${on.firstError ?? off.firstError ?? 'yes'}` : ''}`,
    pass: ratio >= MIN_RATIO && !failed && !PROFILE_DIR,
  };
}

function cpuPerOp(side: Side): number {
  return side.completed === 0 ? 0 : Math.round((side.cpuSeconds / side.completed) * 1e6 * 10) / 10;
}

if (require.main === module) {
  runDecisionTokensBench()
    .then((report) => console.log(JSON.stringify(report, null, 2)))
    .catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
}
