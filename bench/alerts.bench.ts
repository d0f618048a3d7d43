/**
 * What alerting costs the proxy at its worst: every request denied, and every denial an alert
 * (ALERT_ON=deny, a signed webhook to a local receiver, ALERT_RATE_LIMIT raised out of the
 * way). Two gateways run side by side, each on its own PostgreSQL database, identical but for
 * the ALERT_* variables, and are loaded in alternating rounds (off-on, on-off, ...; the machine's
 * speed drifts too much between two single runs a minute apart). An alerting round lasts until
 * the last of its alerts has reached the receiver, so a delivery that falls behind pays for
 * it in throughput. Target: the gateway with alerting keeps at least 75% of the throughput of the
 * one without, and the receiver counts every alert: one per decision the alerting gateway
 * recorded in its audit trail during the rounds, each distinct, both signatures valid, the
 * signed timestamp fresh (checked after the rounds: servers/alert-receiver.ts).
 *
 * `node dist/bench/alerts.bench.js` runs it alone. Environment: BENCH_ALERTS_ROUNDS (6),
 * BENCH_ALERTS_ROUND_SECONDS (5), BENCH_ALERTS_WARMUP_SECONDS (2),
 * BENCH_POSTGRES_URL (postgres://postgres@127.0.0.1:5432/postgres).
 */
import autocannon from 'autocannon';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { perRound, type BenchReport, type BenchRow } from './report';
import type { AlertCounts } from './servers/messages';
import { ask, baseEnv, Child, ChildSet, cpuSeconds, freePort, sleep, waitForHttp } from './servers/processes';
import { POSTGRES_URL, withAdminClient, withDatabase } from './proxy.bench';

const ROOT = path.resolve(__dirname, '..', '..');
const SERVERS = path.join(__dirname, 'servers');
const CONNECTIONS = 50;
const ROUNDS = positiveNumber('BENCH_ALERTS_ROUNDS', 6);
const ROUND_SECONDS = positiveNumber('BENCH_ALERTS_ROUND_SECONDS', 5);
const WARMUP_SECONDS = positiveNumber('BENCH_ALERTS_WARMUP_SECONDS', 2);
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const SECRET = 'bench-alert-secret';
const PROXIED_PATH = '/proxy/api/items?limit=10';
const MIN_RATIO = 0.75;
/** Time allowed for the last alerts to arrive once the load has stopped. */
const SETTLE_TIMEOUT_MS = 60_000;
/** Time a round's alerts get to arrive before the round is taken as having lost some (the gateway dropped them: its warnings say why). */
const ROUND_ALERTS_TIMEOUT_MS = 15_000;

const DENY_ALL = `policies:
  - name: bench-deny-all
    match: { action: "read:*" }
    rules:
      - name: deny-reads
        condition: "true"
        action: deny
        reason: Reads are denied in this benchmark
`;

interface Gateway {
  name: 'off' | 'on';
  child: Child;
  base: string;
  /** The bench agent's credentials on this gateway. */
  headers: Record<string, string>;
}

interface Round {
  /** Requests completed per second, over the load and the wait for the last of their alerts. */
  opsPerSec: number;
  /** Milliseconds from the end of the load to the arrival of its last alert (0 without alerting). */
  drainMs: number;
  /** Alerts of the round's denials that never arrived. */
  missing: number;
  denied: number;
  /** CPU of the gateway process (all its threads), microseconds per request. */
  cpuUsPerRequest: number | null;
  /** CPU of its request thread alone, microseconds per request. */
  mainThreadUsPerRequest: number | null;
  /** CPU of the alert receiver during the round, microseconds per request. */
  receiverUsPerRequest: number | null;
  non403: number;
}

/** The alerting benchmark: one row per gateway, the alternating rounds, the receiver's count. */
export async function runAlertsBench(): Promise<BenchReport> {
  const children = new ChildSet();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-alerts-bench-'));
  const databases = [`agentgov_bench_alerts_off_${Date.now()}`, `agentgov_bench_alerts_on_${Date.now()}`];
  const onExit = () => children.killAllNow();
  process.on('exit', onExit);
  for (const database of databases) await withAdminClient((client) => client.query(`CREATE DATABASE ${database}`));
  try {
    const { child: receiver, port: receiverPort } = await children.fork('alert receiver', path.join(SERVERS, 'alert-receiver.js'), { BENCH_ALERT_SECRET: SECRET });
    const policiesFile = path.join(tmp, 'deny-all.yaml');
    fs.writeFileSync(policiesFile, DENY_ALL);
    const common = { POLICIES_FILE: policiesFile };
    const off = await startGateway(children, 'off', { ...common, DATABASE_URL: withDatabase(POSTGRES_URL, databases[0]), DATA_DIR: path.join(tmp, 'off') });
    const on = await startGateway(children, 'on', {
      ...common,
      DATABASE_URL: withDatabase(POSTGRES_URL, databases[1]),
      DATA_DIR: path.join(tmp, 'on'),
      ALERT_ON: 'deny',
      ALERT_WEBHOOK_URL: `http://127.0.0.1:${receiverPort}/alerts`,
      ALERT_WEBHOOK_SECRET: SECRET,
      ALERT_RATE_LIMIT: '1000000000',
    });
    for (const gateway of [off, on]) {
      const headers = { authorization: `Bearer ${await createAgent(gateway.base)}` };
      gateway.headers = headers;
      const probe = await fetch(gateway.base + PROXIED_PATH, { headers });
      await probe.arrayBuffer();
      if (probe.status !== 403) throw new Error(`gateway (${gateway.name}) answered ${probe.status}, not 403`);
      await load(gateway, headers, WARMUP_SECONDS, null);
    }
    await settle(receiver);
    await ask(receiver, { type: 'reset' });
    const decisionsBefore = await auditTotal(on);
    const rounds: Record<'off' | 'on', Round[]> = { off: [], on: [] };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [off, on] : [on, off];
      for (const gateway of order) rounds[gateway.name].push(await load(gateway, gateway.headers, ROUND_SECONDS, gateway === on ? receiver : null));
    }
    await settle(receiver);
    const received = await ask(receiver, { type: 'verify' }, SETTLE_TIMEOUT_MS);
    if (received.type !== 'alerts') throw new Error(`alert receiver answered ${received.type}`);
    // Why alerts went missing, if any did: the alerting gateway's warnings of dropped alerts.
    const drops = on.child.output().split('\n').filter((line) => line.includes('dropped')).slice(0, 3);
    return report(rounds, received, (await auditTotal(on)) - decisionsBefore, drops);
  } finally {
    await children.stopAll();
    process.off('exit', onExit);
    fs.rmSync(tmp, { recursive: true, force: true });
    for (const database of databases) await withAdminClient((client) => client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)).catch(() => undefined);
  }
}

function report(rounds: Record<'off' | 'on', Round[]>, received: AlertCounts, decisions: number, drops: string[]): BenchReport {
  const total = (list: Round[]) => list.reduce((sum, round) => sum + round.opsPerSec, 0);
  const ratio = total(rounds.on) / total(rounds.off);
  const row = (name: 'off' | 'on', subject: string): BenchRow => ({
    subject,
    opsPerSec: Math.round(total(rounds[name]) / rounds[name].length),
    extra: {
      perRound: perRound(rounds[name].map((round) => round.opsPerSec)),
      ...(name === 'on' ? { drainMs: rounds[name].map((round) => round.drainMs).join(' '), missing: rounds[name].reduce((sum, round) => sum + round.missing, 0) } : {}),
      gatewayCpuUsPerRequest: average(rounds[name].map((round) => round.cpuUsPerRequest)),
      requestThreadUsPerRequest: average(rounds[name].map((round) => round.mainThreadUsPerRequest)),
      receiverUsPerRequest: average(rounds[name].map((round) => round.receiverUsPerRequest)),
      denied: rounds[name].reduce((sum, round) => sum + round.denied, 0),
      non403: rounds[name].reduce((sum, round) => sum + round.non403, 0),
      ...(name === 'on' ? { alertsReceived: received.alerts, distinctIds: received.ids, signaturesChecked: received.checked, signaturesValid: received.signed, freshTimestamps: received.fresh } : {}),
    },
  });
  return {
    name: 'alerts',
    rows: [row('off', 'proxy, every request denied, alerting off'), row('on', 'proxy, every request denied, an alert per denial (signed webhook)')],
    targets: [
      {
        description: `alerting on keeps >= ${MIN_RATIO * 100}% of the throughput without (${ROUNDS} alternating rounds of ${ROUND_SECONDS} s, ${CONNECTIONS} connections)`,
        measured: `${Math.round(total(rounds.on))} vs ${Math.round(total(rounds.off))} req/s summed = ${pct(ratio)} (rounds: ${rounds.on.map((round, i) => pct(round.opsPerSec / rounds.off[i].opsPerSec)).join(', ')})`,
        pass: ratio >= MIN_RATIO,
      },
      {
        description: 'the receiver counts every alert: one per denial the alerting gateway recorded in its audit trail, each distinct, both signatures verified valid, the signed timestamp fresh',
        measured: `${received.alerts} alerts received (${received.ids} distinct ids; ${received.signed} of ${received.checked} signed validly, ${received.fresh} with a fresh timestamp) for ${decisions} denials recorded`,
        pass: received.alerts === decisions && received.ids === decisions && received.checked === received.alerts && received.signed === received.alerts && received.fresh === received.alerts,
      },
    ],
    notes: [
      `Node ${process.version}; ${os.cpus().length} CPUs; loopback; autocannon ${CONNECTIONS} connections, GET ${PROXIED_PATH}, denied by policy (403); each gateway on its own PostgreSQL database, audit on.`,
      'The load generator runs in the bench process; the gateways and the receiver are child processes sharing the same cores, so alert delivery and the receiver compete with the requests for CPU.',
      'An alerting round ends when the last of its alerts has reached the receiver (drainMs after the load), so alerts the gateway is late to send count against its throughput.',
      'The receiver stands in for one on its own machine: while the load runs it only frames, counts and answers the requests; it checks them (event, both signatures, timestamp, distinct ids) after each round.',
      'Warm-up and probe requests are not counted: the receiver is reset after they settle.',
      ...drops.map((line) => `alerting gateway: ${line}`),
    ],
  };
}

async function startGateway(children: ChildSet, name: 'off' | 'on', env: Record<string, string>): Promise<Gateway> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = children.spawn(`gateway (alerting ${name})`, process.execPath, ['--max-semi-space-size=32', path.join(ROOT, 'dist', 'src', 'main.js')], {
    cwd: ROOT,
    env: { ...baseEnv(), PORT: String(port), HOST: '127.0.0.1', PDP_GRPC_PORT: '0', MODE: 'enforce', ADMIN_TOKEN, DEFAULT_PLAN: 'enterprise', LOG_LEVEL: 'warn', ...env },
  });
  await waitForHttp(`${base}/health`, child, 120_000);
  return { name, child, base, headers: {} };
}

async function load(gateway: Gateway, headers: Record<string, string>, seconds: number, receiver: Child | null): Promise<Round> {
  const pid = gateway.child.process.pid;
  const receiverPid = receiver?.process.pid;
  const before = receiver === null ? 0 : (await receiverProgress(receiver)).requests;
  const cpuBefore = cpuSeconds(pid);
  const mainBefore = threadCpuSeconds(pid);
  const receiverBefore = cpuSeconds(receiverPid);
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    autocannon({ url: gateway.base + PROXIED_PATH, connections: CONNECTIONS, pipelining: 1, duration: seconds, headers }, (error: unknown, done: autocannon.Result) =>
      error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(done),
    );
  });
  const loadEnd = Date.now();
  const completed = result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx'];
  const denied = result.statusCodeStats?.['403']?.count ?? 0;
  const { drainMs, missing } = receiver === null ? { drainMs: 0, missing: 0 } : await lastAlertAfter(receiver, before + denied, loadEnd);
  const cpuAfter = cpuSeconds(pid);
  const mainAfter = threadCpuSeconds(pid);
  const receiverAfter = cpuSeconds(receiverPid);
  if (receiver !== null) {
    // Alerts of requests answered after autocannon stopped counting arrive before the next round starts,
    // and the round's alerts are checked then (their timestamps are minutes old at the end of a long run).
    await settle(receiver);
    await ask(receiver, { type: 'verify' }, SETTLE_TIMEOUT_MS);
  }
  return {
    opsPerSec: Math.round(completed / (result.duration + drainMs / 1000)),
    drainMs,
    missing,
    denied,
    cpuUsPerRequest: usPerRequest(cpuBefore, cpuAfter, completed),
    mainThreadUsPerRequest: usPerRequest(mainBefore, mainAfter, completed),
    receiverUsPerRequest: usPerRequest(receiverBefore, receiverAfter, completed),
    non403: completed - denied,
  };
}

/**
 * Milliseconds from `loadEnd` until the receiver had `count` requests (one alert per denial of
 * the round); when some never come, until the last that did, and how many are missing.
 */
async function lastAlertAfter(receiver: Child, count: number, loadEnd: number): Promise<{ drainMs: number; missing: number }> {
  const answer = await ask(receiver, { type: 'await', count, timeoutMs: ROUND_ALERTS_TIMEOUT_MS }, ROUND_ALERTS_TIMEOUT_MS + 5000);
  if (answer.type === 'reached') return { drainMs: Math.max(0, answer.atMs - loadEnd), missing: 0 };
  await settle(receiver);
  const last = await receiverProgress(receiver);
  return { drainMs: Math.max(0, last.lastAtMs - loadEnd), missing: Math.max(0, count - last.requests) };
}

/** The requests the receiver has had so far, and when the last came. */
async function receiverProgress(receiver: Child): Promise<{ requests: number; lastAtMs: number }> {
  const answer = await ask(receiver, { type: 'count' });
  if (answer.type !== 'received') throw new Error(`alert receiver answered ${answer.type}`);
  return answer;
}

/** Waits until the receiver's count stops growing for a while (the last alerts delivered). */
async function settle(receiver: Child): Promise<void> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  let last = -1;
  for (;;) {
    const { requests: count } = await receiverProgress(receiver);
    if (count === last || Date.now() > deadline) return;
    last = count;
    await sleep(300);
  }
}

/** The gateway's recorded decisions, once its audit queue is empty. */
async function auditTotal(gateway: Gateway): Promise<number> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    const health = (await (await fetch(`${gateway.base}/health`)).json()) as { auditQueue: number };
    if (health.auditQueue === 0) break;
    if (Date.now() > deadline) throw new Error(`gateway (${gateway.name}): audit queue not drained`);
    await sleep(200);
  }
  const response = await fetch(`${gateway.base}/admin/audit/stats`, { headers: { 'x-admin-token': ADMIN_TOKEN } });
  const body = (await response.json()) as { total?: number };
  if (response.status !== 200 || typeof body.total !== 'number') throw new Error(`GET /admin/audit/stats answered ${response.status}`);
  return body.total;
}

async function createAgent(base: string): Promise<string> {
  const response = await fetch(`${base}/admin/agents`, {
    method: 'POST',
    headers: { 'x-admin-token': ADMIN_TOKEN, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench-alerts-agent', trustTier: 'verified' }),
  });
  const body = (await response.json()) as { token?: string };
  if (response.status !== 201 || typeof body.token !== 'string') throw new Error(`POST /admin/agents answered ${response.status}: ${JSON.stringify(body)}`);
  return body.token;
}

function usPerRequest(before: number | null, after: number | null, requests: number): number | null {
  return before === null || after === null || requests === 0 ? null : Math.round(((after - before) / requests) * 1e6);
}

/** CPU seconds of a process's main thread (its request thread), from /proc; null where unavailable. */
function threadCpuSeconds(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

function positiveNumber(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

function average(values: Array<number | null>): number | string {
  const known = values.filter((value): value is number => value !== null);
  return known.length === 0 ? '-' : Math.round(known.reduce((sum, value) => sum + value, 0) / known.length);
}

function pct(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

if (require.main === module) {
  runAlertsBench()
    .then((result) => console.log(JSON.stringify(result, null, 2)))
    .catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
}
