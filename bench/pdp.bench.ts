/**
 * The policy decision point against the Node.js ceiling of each of its transports, side by side
 * in one run (issue 11, "Performance"):
 * - gRPC `Evaluate` with IN_FLIGHT calls in flight vs a bare grpc-js server of the same proto;
 * - `EvaluateStream`, one stream with IN_FLIGHT requests outstanding, vs a bare grpc-js stream
 *   answering each request as it arrives;
 * - `POST /v1/check` (autocannon, IN_FLIGHT connections) vs a bare node:http JSON server.
 *
 * The gateway runs as users start it (`npm start`'s node flags, dist/src/main.js) on a fresh
 * PostgreSQL database (the embedded one when PostgreSQL is unreachable), with the 20-policy
 * benchmark set, one organization, one agent and one adapter API key; the calls
 * (fixtures/pdp-requests.ts) carry args and context, and a fifth of them are denied by policy.
 * Every decision is recorded in the audit trail as usual. The bare servers answer each request
 * with the gateway's own answer to it, so messages are the same size both ways; the gRPC client is
 * a proto-loader generated-stub client (one channel), as an SDK's. The load generator is this
 * process; the gateway and the bare servers are their own processes.
 *
 * This machine's speed drifts by tens of percent within a minute (shared virtual CPUs), so each
 * target is judged on ROUNDS alternating rounds (bare-gateway, gateway-bare, ...) of
 * ROUND_SECONDS, after a warm-up of each, and on the ratio of the summed throughputs. p50 and
 * p99 come from a microsecond histogram of every call of the rounds.
 *
 * `node dist/bench/pdp.bench.js` runs it alone. Environment: BENCH_PDP_ROUNDS (10),
 * BENCH_PDP_ROUND_SECONDS (2), BENCH_PDP_WARMUP_SECONDS (2), BENCH_PDP_IN_FLIGHT (100),
 * BENCH_PDP_PARTS (unary,stream,check), BENCH_POSTGRES_URL, BENCH_CPU_PROFILE_DIR (profile the
 * gateway during the rounds; slower).
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import autocannon from 'autocannon';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHistogram, RecordableHistogram } from 'node:perf_hooks';
import { BENCH_POLICIES_YAML } from './fixtures/policy-bench-set';
import { checkBody, PDP_BENCH_AGENT, PDP_BENCH_CALLS, PdpBenchCall } from './fixtures/pdp-requests';
import {
  ADMIN_TOKEN,
  auditDecisionCount,
  createDatabase,
  dropDatabase,
  guardAgainstInterrupt,
  positiveNumber,
  POSTGRES_URL,
  redact,
  startScriptNodeFlags,
  takeProfile,
  waitForAuditDrain,
  withDatabase,
} from './proxy.bench';
import { perRound, type BenchReport, type BenchRow, type BenchTarget } from './report';
import { baseEnv, Child, ChildSet, cpuSeconds, freePort, waitForHttp } from './servers/processes';

const ROOT = path.resolve(__dirname, '..', '..');
const SERVERS = path.join(__dirname, 'servers');
const PROTO = path.join(ROOT, 'proto', 'pdp.proto');
const ROUNDS = positiveNumber('BENCH_PDP_ROUNDS', 10);
const ROUND_SECONDS = positiveNumber('BENCH_PDP_ROUND_SECONDS', 2);
const WARMUP_SECONDS = positiveNumber('BENCH_PDP_WARMUP_SECONDS', 2);
const IN_FLIGHT = positiveNumber('BENCH_PDP_IN_FLIGHT', 100);
const PROFILE_DIR = process.env.BENCH_CPU_PROFILE_DIR;
const TARGETS = { unary: 0.8, stream: 0.7, check: 0.6 } as const;

type Part = keyof typeof TARGETS;
/** The parts to run (all unless BENCH_PDP_PARTS names some, e.g. `check` while profiling it). */
const PARTS = (process.env.BENCH_PDP_PARTS ?? 'unary,stream,check').split(',').map((part) => part.trim());
type Which = 'bare' | 'gateway';

/** A PolicyResponse or `/v1/check` answer as decoded (proto-loader objects, or parsed JSON). */
type Answer = Record<string, unknown>;

export type PdpStub = grpc.Client & {
  Evaluate(request: object, metadata: grpc.Metadata, callback: (error: grpc.ServiceError | null, response: Answer) => void): void;
  EvaluateStream(metadata: grpc.Metadata): grpc.ClientDuplexStream<object, Answer>;
};

/** One round (or warm-up) of one subject. */
interface Load {
  completed: number;
  errors: number;
  seconds: number;
  opsPerSec: number;
  /** CPU of the measured server process, seconds. */
  serverCpu: number | null;
  clientCpu: number;
}

/** A subject of one part: how to load it, and what it measured over the rounds. */
interface Subject {
  which: Which;
  pid: number | undefined;
  run: (seconds: number, latencyUs: RecordableHistogram | null) => Promise<{ completed: number; errors: number; firstError?: string }>;
  rounds: Load[];
  /** Calls answered during the warm-up (they are in the audit trail too). */
  warmupCompleted: number;
  latencyUs: RecordableHistogram;
  firstError?: string;
}

interface PartResult {
  part: Part;
  bare: Subject;
  gateway: Subject;
}

export interface Gateway {
  child: Child;
  base: string;
  grpcPort: number;
  startupMs: number;
}

/** The PDP benchmark: bare vs gateway rows for unary gRPC, the stream and /v1/check, with targets. */
export async function runPdpBench(): Promise<BenchReport> {
  const children = new ChildSet();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-pdp-bench-'));
  let database: string | null = null;
  const releaseGuard = guardAgainstInterrupt('pdp', children, tmp, () => database);
  const notes: string[] = [];
  const clients: grpc.Client[] = [];
  try {
    database = await createDatabase().catch((error: unknown) => {
      notes.push(`PostgreSQL not reachable at ${redact(POSTGRES_URL)} (${error instanceof Error ? error.message : String(error)}): the gateway ran on the embedded database.`);
      return null;
    });
    const profileFile = PROFILE_DIR ? path.resolve(PROFILE_DIR, `gateway-pdp-${Date.now()}.cpuprofile`) : undefined;
    const gateway = await startGateway(children, tmp, database, profileFile);
    const { agentId, apiKey } = await provision(gateway.base);
    const metadata = new grpc.Metadata();
    metadata.set('x-api-key', apiKey);
    const gatewayStub = stub(`127.0.0.1:${gateway.grpcPort}`);
    clients.push(gatewayStub);
    const requests = PDP_BENCH_CALLS.map((call) => policyRequest(agentId, call));
    const answers = await captureAnswers(gatewayStub, metadata, gateway.base, apiKey, agentId);
    notes.push(...answers.notes);

    const bareGrpc = await children.fork('bare grpc-js PDP', path.join(SERVERS, 'bare-pdp-grpc.js'), { BENCH_PDP_ANSWERS: JSON.stringify(answers.grpc) });
    const bareHttp = await children.fork('bare node:http check', path.join(SERVERS, 'bare-check-http.js'), { BENCH_CHECK_ANSWERS: JSON.stringify(answers.check) });
    const bareStub = stub(`127.0.0.1:${bareGrpc.port}`);
    clients.push(bareStub);
    const checkRequests = PDP_BENCH_CALLS.map((call) => ({
      method: 'POST' as const,
      path: '/v1/check',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify(checkBody(agentId, call)),
    }));

    const gatewayPid = gateway.child.process.pid;
    const parts: Array<[Part, Subject, Subject]> = [
      ['unary', subject('bare', bareGrpc.child.process.pid, (s, h) => unaryLoad(bareStub, metadata, requests, s, h)), subject('gateway', gatewayPid, (s, h) => unaryLoad(gatewayStub, metadata, requests, s, h))],
      ['stream', subject('bare', bareGrpc.child.process.pid, (s, h) => streamLoad(bareStub, metadata, requests, s, h)), subject('gateway', gatewayPid, (s, h) => streamLoad(gatewayStub, metadata, requests, s, h))],
      [
        'check',
        subject('bare', bareHttp.child.process.pid, (s, h) => checkLoad(`http://127.0.0.1:${bareHttp.port}`, checkRequests, s, h)),
        subject('gateway', gatewayPid, (s, h) => checkLoad(gateway.base, checkRequests, s, h)),
      ],
    ];
    if (profileFile) gateway.child.process.kill('SIGUSR2');
    const results: PartResult[] = [];
    const settle = () => waitForAuditDrain(gateway.base, gateway.child);
    for (const [part, bare, gw] of parts) if (PARTS.includes(part)) results.push(await alternate(part, bare, gw, settle));
    if (profileFile) {
      notes.push(`gateway CPU profile of the rounds (${profileFile}), top self time: ${(await takeProfile(gateway.child, profileFile)).join('; ')}`);
      notes.push('BENCH_CPU_PROFILE_DIR was set: the gateway was profiled (sampling every 200 µs), so its numbers are lower than usual.');
    }
    notes.push(await auditNote(gateway, results, answers.decisions));
    return {
      name: 'pdp',
      rows: results.flatMap(rowsOf),
      targets: results.map(targetOf),
      notes: [
        `Node ${process.version}; ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}); loopback; gateway on ${database === null ? 'the embedded database' : 'PostgreSQL'}, ` +
          `enforce mode, 20 policies (bench/fixtures/policy-bench-set.ts), audit on, started in ${gateway.startupMs} ms.`,
        `${PDP_BENCH_CALLS.length} distinct calls with args and context (${answers.denied} denied by policy), sent round-robin; ${IN_FLIGHT} calls in flight on one gRPC channel, ` +
          `${IN_FLIGHT} requests outstanding on one EvaluateStream, ${IN_FLIGHT} autocannon connections for /v1/check.`,
        `Each part: ${WARMUP_SECONDS} s warm-up of each subject, then ${ROUNDS} alternating rounds of ${ROUND_SECONDS} s, each run starting once the gateway's audit queue is empty; ops/s is the mean over the rounds, p50/p99 over every call of the rounds; ` +
          'serverCpuUsPerOp is the measured server process’s CPU time per answered call.',
        'The load generator (this process: grpc-js generated-stub client, autocannon) shares the 2 cores with the server processes, as do PostgreSQL (when used) and other users of the machine.',
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

function subject(which: Which, pid: number | undefined, run: Subject['run']): Subject {
  return { which, pid, run, rounds: [], warmupCompleted: 0, latencyUs: createHistogram() };
}

/**
 * Warm-up of each subject, then ROUNDS rounds alternating which goes first. Each run starts once
 * the gateway's audit queue is empty (`settle`): otherwise the audit entries of its last run are
 * still being written (by its audit worker and PostgreSQL) during the next run, slowing whichever
 * subject that is; at the start of the stream part, the unary part's backlog made the bare
 * server's first rounds up to a quarter slower. The price: the last flush interval's writing of
 * each gateway run falls outside it.
 */
async function alternate(part: Part, bare: Subject, gateway: Subject, settle: () => Promise<void>): Promise<PartResult> {
  for (const one of [bare, gateway]) {
    await settle();
    one.warmupCompleted = (await one.run(WARMUP_SECONDS, null)).completed;
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const one of round % 2 === 0 ? [bare, gateway] : [gateway, bare]) {
      await settle();
      const serverBefore = cpuSeconds(one.pid);
      const clientBefore = process.cpuUsage();
      const started = performance.now();
      const { completed, errors, firstError } = await one.run(ROUND_SECONDS, one.latencyUs);
      const seconds = (performance.now() - started) / 1000;
      const serverAfter = cpuSeconds(one.pid);
      const client = process.cpuUsage(clientBefore);
      one.firstError ??= firstError;
      one.rounds.push({
        completed,
        errors,
        seconds,
        opsPerSec: Math.round(completed / seconds),
        serverCpu: serverBefore === null || serverAfter === null ? null : serverAfter - serverBefore,
        clientCpu: (client.user + client.system) / 1e6,
      });
    }
  }
  return { part, bare, gateway };
}

/** IN_FLIGHT callers, each making its next Evaluate call as soon as its last one answers. */
export function unaryLoad(client: PdpStub, metadata: grpc.Metadata, requests: object[], seconds: number, latencyUs: RecordableHistogram | null) {
  return new Promise<{ completed: number; errors: number; firstError?: string }>((resolve) => {
    const end = performance.now() + seconds * 1000;
    let next = 0;
    let completed = 0;
    let errors = 0;
    let firstError: string | undefined;
    let running = IN_FLIGHT;
    const send = () => {
      if (performance.now() >= end) {
        if (--running === 0) resolve({ completed, errors, firstError });
        return;
      }
      const request = requests[next++ % requests.length];
      const started = performance.now();
      client.Evaluate(request, metadata.clone(), (error) => {
        if (error) {
          errors++;
          firstError ??= `${grpc.status[error.code]}: ${error.details}`;
        } else {
          completed++;
          latencyUs?.record(Math.max(1, Math.round((performance.now() - started) * 1000)));
        }
        send();
      });
    };
    for (let i = 0; i < IN_FLIGHT; i++) send();
  });
}

/**
 * One EvaluateStream with IN_FLIGHT requests outstanding: a new request goes out as each answer
 * comes back (answers come in request order), and writing waits for `drain` when grpc-js says so.
 */
export function streamLoad(client: PdpStub, metadata: grpc.Metadata, requests: object[], seconds: number, latencyUs: RecordableHistogram | null) {
  return new Promise<{ completed: number; errors: number; firstError?: string }>((resolve) => {
    const call = client.EvaluateStream(metadata.clone());
    const end = performance.now() + seconds * 1000;
    const sentAt: number[] = [];
    let answered = 0;
    let next = 0;
    let blocked = false;
    let ending = false;
    let failure: string | undefined;
    const pump = () => {
      while (!blocked && !ending && next - answered < IN_FLIGHT) {
        if (performance.now() >= end) {
          ending = true;
          call.end();
          return;
        }
        sentAt.push(performance.now());
        blocked = !call.write(requests[next++ % requests.length]);
      }
    };
    call.on('drain', () => {
      blocked = false;
      pump();
    });
    call.on('data', () => {
      latencyUs?.record(Math.max(1, Math.round((performance.now() - sentAt[answered]) * 1000)));
      answered++;
      pump();
    });
    call.on('error', (error: grpc.ServiceError) => {
      failure = `${grpc.status[error.code]}: ${error.details}`;
    });
    call.on('status', () => resolve({ completed: answered, errors: failure === undefined ? 0 : 1, firstError: failure }));
    pump();
  });
}

/** autocannon with IN_FLIGHT connections, each sending the calls' bodies round-robin. */
export function checkLoad(origin: string, requests: autocannon.Request[], seconds: number, latencyUs: RecordableHistogram | null) {
  return new Promise<{ completed: number; errors: number; firstError?: string }>((resolve, reject) => {
    const instance = autocannon({ url: origin, connections: IN_FLIGHT, pipelining: 1, duration: seconds, requests }, (error: unknown, result: autocannon.Result) => {
      if (error) reject(error instanceof Error ? error : new Error(String(error)));
      else resolve({ completed: result['2xx'], errors: result.non2xx + result.errors + result.timeouts, firstError: result.non2xx > 0 ? `${result.non2xx} non-2xx answers` : undefined });
    });
    instance.on('response', (_client, status, _bytes, responseTime) => {
      if (status === 200) latencyUs?.record(Math.max(1, Math.round(responseTime * 1000)));
    });
  });
}

/**
 * Starts the gateway like users do (`npm start`'s node flags), on `database` or the embedded one
 * in `tmp`, with the benchmark's policies; `extraEnv` adds to its environment (metrics.bench.ts
 * starts two, named by `name`).
 */
export async function startGateway(children: ChildSet, tmp: string, database: string | null, profileFile: string | undefined, extraEnv: NodeJS.ProcessEnv = {}, name = 'gateway'): Promise<Gateway> {
  const policiesFile = path.join(tmp, 'bench-policies.yaml');
  fs.writeFileSync(policiesFile, BENCH_POLICIES_YAML);
  const dataDir = path.join(tmp, `${name}-data`);
  fs.mkdirSync(dataDir, { recursive: true });
  const [port, grpcPort] = [await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = {
    ...baseEnv(),
    PORT: String(port),
    HOST: '127.0.0.1',
    PDP_GRPC_PORT: String(grpcPort),
    MODE: 'enforce',
    ADMIN_TOKEN,
    DEFAULT_PLAN: 'enterprise',
    POLICIES_FILE: policiesFile,
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    ...(database === null ? {} : { DATABASE_URL: withDatabase(POSTGRES_URL, database) }),
    ...(profileFile ? { BENCH_CPU_PROFILE_FILE: profileFile } : {}),
    ...extraEnv,
  };
  const nodeArgs = [...startScriptNodeFlags(), ...(profileFile ? ['--require', path.join(SERVERS, 'cpu-profile.js')] : [])];
  const started = Date.now();
  const child = children.spawn(name, process.execPath, [...nodeArgs, path.join(ROOT, 'dist', 'src', 'main.js')], { cwd: ROOT, env });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(`${base}/health`, child, 120_000);
  return { child, base, grpcPort, startupMs: Date.now() - started };
}

/** One agent and one adapter API key in the bootstrap organization, as an operator makes them. */
export async function provision(base: string): Promise<{ agentId: string; apiKey: string }> {
  const agent = await adminPost<{ id?: string }>(base, '/admin/agents', PDP_BENCH_AGENT);
  const key = await adminPost<{ key?: string }>(base, '/admin/api-keys', { name: 'pdp bench adapter' });
  if (typeof agent.id !== 'string' || typeof key.key !== 'string') throw new Error('POST /admin/agents or /admin/api-keys answered without an id or key');
  return { agentId: agent.id, apiKey: key.key };
}

async function adminPost<T>(base: string, route: string, body: object): Promise<T> {
  const response = await fetch(base + route, { method: 'POST', headers: { 'x-admin-token': ADMIN_TOKEN, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const answer = (await response.json()) as T;
  if (response.status !== 201) throw new Error(`POST ${route} answered ${response.status}: ${JSON.stringify(answer)}`);
  return answer;
}

const LOADER_OPTIONS = { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true };

/** A generated-stub client (proto-loader), one channel, as an SDK makes it. */
export function stub(address: string): PdpStub {
  const definition = protoLoader.loadSync(PROTO, LOADER_OPTIONS);
  const pdp = (grpc.loadPackageDefinition(definition) as unknown as { agentgov: { pdp: { v1: { PolicyDecisionPoint: grpc.ServiceClientConstructor } } } }).agentgov.pdp.v1;
  return new pdp.PolicyDecisionPoint(address, grpc.credentials.createInsecure()) as unknown as PdpStub;
}

export function policyRequest(agentId: string, call: PdpBenchCall): object {
  return { agentId, action: call.action, resource: call.resource, plugin: call.plugin, function: call.function, args: struct(call.args), context: struct(call.context) };
}

/** google.protobuf.Struct of a plain object, as a generated stub builds it from a map. */
function struct(object: Record<string, unknown>): object {
  return { fields: Object.fromEntries(Object.entries(object).map(([key, value]) => [key, structValue(value)])) };
}

function structValue(value: unknown): object {
  if (value === null) return { nullValue: 'NULL_VALUE' };
  if (typeof value === 'number') return { numberValue: value };
  if (typeof value === 'string') return { stringValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  if (Array.isArray(value)) return { listValue: { values: value.map(structValue) } };
  return { structValue: struct(value as Record<string, unknown>) };
}

export interface Captured {
  /** The gateway's PolicyResponse to each call, by action: what the bare gRPC server answers. */
  grpc: Record<string, Answer>;
  /** The gateway's /v1/check answer to each call, by action: what the bare HTTP server answers. */
  check: Record<string, Answer>;
  denied: number;
  /** Decisions made while capturing (they are in the audit trail too). */
  decisions: number;
  notes: string[];
}

/**
 * Asks the gateway every call once over gRPC and /v1/check: checks that both transports decide
 * as the benchmark set says, and keeps the answers for the bare servers.
 */
export async function captureAnswers(client: PdpStub, metadata: grpc.Metadata, base: string, apiKey: string, agentId: string): Promise<Captured> {
  const captured: Captured = { grpc: {}, check: {}, denied: 0, decisions: 0, notes: [] };
  for (const call of PDP_BENCH_CALLS) {
    const grpcAnswer = await new Promise<Answer>((resolve, reject) => client.Evaluate(policyRequest(agentId, call), metadata.clone(), (error, answer) => (error ? reject(error) : resolve(answer))));
    const response = await fetch(`${base}/v1/check`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(checkBody(agentId, call)) });
    const checkAnswer = (await response.json()) as Answer;
    captured.decisions += 2;
    if (response.status !== 200) throw new Error(`POST /v1/check answered ${response.status} for ${call.action}: ${JSON.stringify(checkAnswer)}`);
    const grpcDecision = grpcAnswer.decision === 'DECISION_ALLOW' ? 'allow' : 'deny';
    if (grpcDecision !== call.expected || checkAnswer.decision !== call.expected) {
      throw new Error(`${call.action}: expected ${call.expected}, gRPC answered ${grpcDecision} (${String(grpcAnswer.policy)}), /v1/check ${String(checkAnswer.decision)} (${String(checkAnswer.policy)})`);
    }
    if (call.expected === 'deny') captured.denied++;
    captured.grpc[call.action] = grpcAnswer;
    captured.check[call.action] = checkAnswer;
  }
  const sizes = (answers: Answer[], size: (answer: Answer) => number) => answers.map(size).sort((a, b) => a - b);
  const checkSizes = sizes(Object.values(captured.check), (answer) => Buffer.byteLength(JSON.stringify(answer)));
  const requestSizes = sizes(
    PDP_BENCH_CALLS.map((call) => checkBody(agentId, call)),
    (body) => Buffer.byteLength(JSON.stringify(body)),
  );
  captured.notes.push(
    `Both transports decide every call as expected (${PDP_BENCH_CALLS.length - captured.denied} allowed, ${captured.denied} denied). ` +
      `/v1/check bodies ${requestSizes[0]}-${requestSizes[requestSizes.length - 1]} bytes, answers ${checkSizes[0]}-${checkSizes[checkSizes.length - 1]} bytes.`,
  );
  return captured;
}

/**
 * Every answered decision must be in the audit trail once the queue has drained. autocannon stops
 * with up to IN_FLIGHT requests unanswered, which the gateway still decides and records: those
 * may add entries, never take any away.
 */
async function auditNote(gateway: Gateway, results: PartResult[], captureDecisions: number): Promise<string> {
  await waitForAuditDrain(gateway.base, gateway.child);
  const entries = await auditDecisionCount(gateway.base);
  const answered = captureDecisions + sum(results.map(({ gateway: one }) => one.warmupCompleted + sum(one.rounds.map((round) => round.completed))));
  const checkRuns = results.some((result) => result.part === 'check') ? ROUNDS + 1 : 0;
  const unanswered = checkRuns * IN_FLIGHT;
  const verdict = entries < answered ? `: ${answered - entries} ENTRIES MISSING` : entries - answered > unanswered ? `: ${entries - answered - unanswered} MORE ENTRIES THAN DECISIONS` : ' (none lost)';
  return (
    `Audit: ${entries.toLocaleString('en-US')} decision entries for ${answered.toLocaleString('en-US')} decisions answered (capture, warm-ups, rounds), ` +
    `plus at most ${unanswered} left unanswered when autocannon stopped${verdict}.`
  );
}

const LABELS: Record<Part, Record<Which, string>> = {
  unary: { bare: 'bare grpc-js Evaluate', gateway: 'gateway gRPC Evaluate' },
  stream: { bare: 'bare grpc-js EvaluateStream (1 stream)', gateway: 'gateway EvaluateStream (1 stream)' },
  check: { bare: 'bare node:http JSON (/v1/check)', gateway: 'gateway POST /v1/check' },
};

function meanOps(one: Subject): number {
  return Math.round(sum(one.rounds.map((round) => round.opsPerSec)) / one.rounds.length);
}

function rowsOf(result: PartResult): BenchRow[] {
  const ratio = sum(result.gateway.rounds.map((r) => r.opsPerSec)) / sum(result.bare.rounds.map((r) => r.opsPerSec));
  return [result.bare, result.gateway].map((one) => {
    const seconds = sum(one.rounds.map((round) => round.seconds));
    const completed = sum(one.rounds.map((round) => round.completed));
    const serverCpu = one.rounds.every((round) => round.serverCpu !== null) ? sum(one.rounds.map((round) => round.serverCpu ?? 0)) : null;
    const extra: Record<string, number | string> = {
      perRound: perRound(one.rounds.map((round) => round.opsPerSec)),
      completed,
      errors: sum(one.rounds.map((round) => round.errors)),
      ...(serverCpu === null ? {} : { 'serverCpu%': Math.round((serverCpu / seconds) * 100), serverCpuUsPerOp: cpuPerOp(one) }),
      'clientCpu%': Math.round((sum(one.rounds.map((round) => round.clientCpu)) / seconds) * 100),
      'p99.9Ms': ms(one.latencyUs, 99.9),
      ...(one.which === 'gateway' ? { 'ops/bare': round3(ratio) } : {}),
      ...(one.firstError === undefined ? {} : { firstError: one.firstError }),
    };
    return { subject: LABELS[result.part][one.which], opsPerSec: meanOps(one), p50Ms: ms(one.latencyUs, 50), p99Ms: ms(one.latencyUs, 99), extra };
  });
}

const DESCRIPTIONS: Record<Part, string> = {
  unary: `gRPC Evaluate, ${IN_FLIGHT} calls in flight: >= ${TARGETS.unary * 100}% of the calls/s of a bare grpc-js server (same proto, same client, same message sizes)`,
  stream: `EvaluateStream, one stream: >= ${TARGETS.stream * 100}% of the decisions/s of a bare grpc-js bidirectional stream (same message sizes)`,
  check: `POST /v1/check: >= ${TARGETS.check * 100}% of the requests/s of a bare node:http server answering the same JSON`,
};

function targetOf(result: PartResult): BenchTarget {
  const { bare, gateway } = result;
  const gatewayOps = gateway.rounds.map((round) => round.opsPerSec);
  const bareOps = bare.rounds.map((round) => round.opsPerSec);
  const ratio = sum(gatewayOps) / sum(bareOps);
  const failed = gateway.rounds.some((round) => round.errors > 0);
  return {
    description: DESCRIPTIONS[result.part],
    measured:
      `${ROUNDS} alternating rounds of ${ROUND_SECONDS} s: ${sum(gatewayOps).toLocaleString('en-US')} vs ${sum(bareOps).toLocaleString('en-US')} ops/s summed = ${pct(ratio)} ` +
      `(rounds: ${gatewayOps.map((ops, i) => pct(ops / bareOps[i])).join(', ')}); p50 ${ms(gateway.latencyUs, 50)} vs ${ms(bare.latencyUs, 50)} ms, ` +
      `p99 ${ms(gateway.latencyUs, 99)} vs ${ms(bare.latencyUs, 99)} ms; server CPU per call ${cpuPerOp(gateway)} vs ${cpuPerOp(bare)} µs` +
      `${failed ? `; gateway errors: ${gateway.firstError ?? 'yes'}` : ''}`,
    pass: ratio >= TARGETS[result.part] && !failed,
  };
}

/** Server CPU time per answered call over the rounds, µs (less sensitive to other load than throughput). */
function cpuPerOp(one: Subject): string {
  if (one.rounds.some((round) => round.serverCpu === null)) return '?';
  return String(Math.round((sum(one.rounds.map((round) => round.serverCpu ?? 0)) / sum(one.rounds.map((round) => round.completed))) * 1e6));
}

function ms(histogram: RecordableHistogram, percentile: number): number {
  return histogram.count === 0 ? 0 : round3(histogram.percentile(percentile) / 1000);
}

export function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}

export function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

export function pct(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

if (require.main === module) {
  runPdpBench()
    .then((report) => console.log(JSON.stringify(report, null, 2)))
    .catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
}
