/**
 * The adapter SDKs against a real gateway (embedded database, loopback), one process each:
 * a cached check() against an uncached one over gRPC (target: the cached call at least 50x
 * faster, by mean time per call), and guard()'s overhead over calling the function bare (a
 * cached check and its audit event, the call, its outcome event, both written to the
 * write-ahead file, which is fsynced once per audit window; target: at most 0.2 ms at p50, the
 * .NET SDK's target for the same call). The TypeScript SDK
 * is measured in this process; the Python SDK by sdk/python/bench_guard.py when it exists
 * (/usr/bin/python3, PYTHONPATH=sdk/python), whose JSON is reported alongside.
 * `node dist/bench/run.js sdk` runs it alone; BENCH_SDK_ITERATIONS sets the uncached count.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GovernanceClient } from '../sdk/typescript/src';
import type { BenchReport, BenchRow, BenchTarget } from './report';
import { baseEnv, ChildSet, freePort, waitForHttp } from './servers/processes';

const ROOT = path.resolve(__dirname, '..', '..');
const ADMIN_TOKEN = 'bench-sdk-admin-token-0123456789abcdef';
const ITERATIONS = Number(process.env.BENCH_SDK_ITERATIONS ?? 500);
const MIN_SPEEDUP = 50;
/** The most guard() may add to a cached allowed call, at p50 (README "Audit events"). */
const MAX_OVERHEAD_P50_MS = 0.2;
const PYTHON_SCRIPT = path.join(ROOT, 'sdk', 'python', 'bench_guard.py');
const ARGS = { path: '/tmp/bench.txt' };

interface Gateway {
  url: string;
  grpcAddress: string;
  apiKey: string;
  agentId: string;
}

interface Samples {
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
}

/** Times `run` `count` times, one after the other. */
async function time(count: number, run: () => unknown): Promise<Samples> {
  const samples: number[] = [];
  for (let index = 0; index < count; index++) {
    const started = process.hrtime.bigint();
    await run();
    samples.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  samples.sort((a, b) => a - b);
  const meanMs = samples.reduce((sum, value) => sum + value, 0) / samples.length;
  return { meanMs, p50Ms: samples[Math.floor(samples.length / 2)], p99Ms: samples[Math.min(samples.length - 1, Math.floor(samples.length * 0.99))] };
}

function row(subject: string, samples: Samples, extra: BenchRow['extra'] = {}): BenchRow {
  return { subject, opsPerSec: Math.round(1000 / samples.meanMs), p50Ms: samples.p50Ms, p99Ms: samples.p99Ms, extra: { meanMs: samples.meanMs, ...extra } };
}

function bareTool(args: { path: string }): string {
  return args.path.toUpperCase();
}

async function startGateway(children: ChildSet, dataDir: string): Promise<Gateway> {
  const [port, grpcPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${port}`;
  const env = { ...baseEnv(), PORT: String(port), HOST: '127.0.0.1', PDP_GRPC_PORT: String(grpcPort), ADMIN_TOKEN, DATA_DIR: dataDir, LOG_LEVEL: 'warn', POLICIES_FILE: path.join(ROOT, 'sdk', 'fixtures', 'policies.yaml') };
  const gateway = children.spawn('gateway', process.execPath, [path.join(ROOT, 'dist', 'src', 'main.js')], { cwd: ROOT, env });
  await waitForHttp(`${url}/health`, gateway, 120_000);
  const admin = async (pathname: string, body: object) => {
    const response = await fetch(url + pathname, { method: 'POST', headers: { 'content-type': 'application/json', 'x-admin-token': ADMIN_TOKEN }, body: JSON.stringify(body) });
    if (response.status !== 201) throw new Error(`${pathname}: ${response.status} ${await response.text()}`);
    return (await response.json()) as { id: string; key: string };
  };
  const agentId = (await admin('/admin/agents', { name: 'bench-sdk', trustTier: 'verified' })).id;
  const apiKey = (await admin('/admin/api-keys', { name: 'bench-sdk' })).key;
  return { url, grpcAddress: `127.0.0.1:${grpcPort}`, apiKey, agentId };
}

interface Measured {
  rows: BenchRow[];
  speedup: number;
  overheadMs: number;
  overheadP50Ms: number;
}

async function measureTypeScript(gateway: Gateway, walDir: string): Promise<Measured> {
  const options = { gatewayUrl: gateway.url, grpcAddress: gateway.grpcAddress, apiKey: gateway.apiKey, agentId: gateway.agentId };
  const cached = await GovernanceClient.create({ ...options, auditLogPath: path.join(walDir, 'cached.wal') });
  const uncached = await GovernanceClient.create({ ...options, cache: false, auditLogPath: path.join(walDir, 'uncached.wal') });
  try {
    if ((await uncached.check('FilePlugin', 'ReadFile', ARGS)).via !== 'grpc') throw new Error('the uncached check did not go over gRPC');
    await cached.check('FilePlugin', 'ReadFile', ARGS);
    if ((await cached.check('FilePlugin', 'ReadFile', ARGS)).via !== 'cache') throw new Error('the second check was not answered from the cache');
    await time(50, () => uncached.check('FilePlugin', 'ReadFile', ARGS));
    const uncachedTimes = await time(ITERATIONS, () => uncached.check('FilePlugin', 'ReadFile', ARGS));
    const cachedTimes = await time(ITERATIONS * 10, () => cached.check('FilePlugin', 'ReadFile', ARGS));
    const bareTimes = await time(ITERATIONS * 10, () => bareTool(ARGS));
    const guardTimes = await time(ITERATIONS, () => cached.guard('FilePlugin', 'ReadFile', ARGS, () => bareTool(ARGS)));
    await cached.flushAudit();
    const speedup = uncachedTimes.meanMs / cachedTimes.meanMs;
    const overheadMs = guardTimes.meanMs - bareTimes.meanMs;
    const overheadP50Ms = guardTimes.p50Ms - bareTimes.p50Ms;
    return {
      speedup,
      overheadMs,
      overheadP50Ms,
      rows: [
        row('typescript: check() uncached, gRPC', uncachedTimes, { calls: ITERATIONS }),
        row('typescript: check() cached', cachedTimes, { calls: ITERATIONS * 10, speedup }),
        row('typescript: the function bare', bareTimes, { calls: ITERATIONS * 10 }),
        row('typescript: guard() (cached check + call + audit, group-committed)', guardTimes, { calls: ITERATIONS, overheadMs, overheadP50Ms }),
      ],
    };
  } finally {
    await Promise.all([cached.close(), uncached.close()]);
  }
}

/** The Python SDK's own measurement (sdk/python/bench_guard.py prints one JSON object). */
function runPython(gateway: Gateway): Promise<Record<string, unknown>> {
  const args = [PYTHON_SCRIPT, '--iterations', String(ITERATIONS), '--gateway-url', gateway.url, '--grpc-address', gateway.grpcAddress, '--api-key', gateway.apiKey, '--agent-id', gateway.agentId];
  const env = { ...baseEnv(), PYTHONPATH: path.join(ROOT, 'sdk', 'python') };
  return new Promise((resolve, reject) => {
    execFile('/usr/bin/python3', args, { cwd: ROOT, env, timeout: 300_000, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`${PYTHON_SCRIPT} failed: ${error.message}\n${stderr}`));
      try {
        resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '') as Record<string, unknown>);
      } catch {
        reject(new Error(`${PYTHON_SCRIPT} printed no JSON: ${stdout}\n${stderr}`));
      }
    });
  });
}

function pythonRows(result: Record<string, unknown>): Measured {
  const samples = (name: string): Samples => {
    const value = result[name] as { mean: number; p50: number; p99: number };
    return { meanMs: value.mean, p50Ms: value.p50, p99Ms: value.p99 };
  };
  const speedup = Number(result.cachedSpeedup);
  const overheadMs = Number(result.guardOverheadMs);
  const overheadP50Ms = Number(result.guardOverheadP50Ms);
  return {
    speedup,
    overheadMs,
    overheadP50Ms,
    rows: [
      row('python: check() uncached, gRPC', samples('checkUncachedMs')),
      row('python: check() cached', samples('checkCachedMs'), { speedup, cpuUsPerCall: Number(result.checkCachedCpuUs) }),
      row('python: the function bare', samples('bareCallMs')),
      row('python: guard() (cached check + call + audit, group-committed)', samples('guardMs'), { overheadMs, overheadP50Ms }),
    ],
  };
}

function overheadTarget(sdk: string, overheadP50Ms: number): BenchTarget {
  return { description: `${sdk}: guard() adds at most ${MAX_OVERHEAD_P50_MS} ms to a cached allowed call at p50`, measured: `${overheadP50Ms.toFixed(3)} ms`, pass: overheadP50Ms <= MAX_OVERHEAD_P50_MS };
}

function speedupTarget(sdk: string, speedup: number): BenchTarget {
  return { description: `${sdk}: a cached check() at least ${MIN_SPEEDUP}x faster than an uncached one over gRPC (mean per call)`, measured: `${speedup.toFixed(1)}x`, pass: speedup >= MIN_SPEEDUP };
}

export async function runSdkBench(): Promise<BenchReport> {
  const children = new ChildSet();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-bench-sdk-'));
  const onExit = () => children.killAllNow();
  process.on('exit', onExit);
  try {
    const gateway = await startGateway(children, path.join(tmp, 'data'));
    const typescript = await measureTypeScript(gateway, tmp);
    const rows = [...typescript.rows];
    const targets = [speedupTarget('typescript', typescript.speedup), overheadTarget('typescript', typescript.overheadP50Ms)];
    const notes = [
      `Sequential calls, one at a time, from one client; gateway on the embedded database; args ${JSON.stringify(ARGS)} (allowed and cacheable under sdk/fixtures/policies.yaml).`,
      `guard() overhead over the bare function: typescript ${(typescript.overheadP50Ms * 1000).toFixed(1)} µs at p50, ${(typescript.overheadMs * 1000).toFixed(1)} µs mean (the write-ahead file, in ${os.tmpdir()}, is fsynced once per audit window, auditDurability batch).`,
    ];
    if (fs.existsSync(PYTHON_SCRIPT)) {
      const python = pythonRows(await runPython(gateway));
      rows.push(...python.rows);
      targets.push(speedupTarget('python', python.speedup), overheadTarget('python', python.overheadP50Ms));
      notes.push(`guard() overhead over the bare function: python ${(python.overheadP50Ms * 1000).toFixed(1)} µs at p50, ${(python.overheadMs * 1000).toFixed(1)} µs mean (sdk/python/bench_guard.py, its own timings).`);
    } else {
      notes.push(`${path.relative(ROOT, PYTHON_SCRIPT)} not found: the Python SDK was not measured.`);
    }
    return { name: 'sdk', rows, targets, notes };
  } finally {
    await children.stopAll();
    process.off('exit', onExit);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (require.main === module) {
  runSdkBench().then(
    (report) => console.log(JSON.stringify(report, null, 2)),
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
