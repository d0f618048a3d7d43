/**
 * `npm run bench`: runs every benchmark but the soak (or those named: `node dist/bench/run.js proxy`), prints
 * one table per benchmark with its targets, and writes bench/results/<name>.json (the report
 * plus the machine it ran on). A failed target is printed loudly but does not fail the command;
 * a benchmark that crashes does (exit code 1), after the others have run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runAlertsBench } from './alerts.bench';
import { runBoundedBench } from './bounded.bench';
import { runAnalyticsBench } from './analytics.bench';
import { runIngestBench } from './ingest.bench';
import { runMcpBench } from './mcp.bench';
import { runMetricsBench } from './metrics.bench';
import { runDecisionTokensBench } from './decision-tokens.bench';
import { runPdpBench } from './pdp.bench';
import { runPolicyBench } from './policy.bench';
import { runProxyBench } from './proxy.bench';
import { runSidecarBench } from './sidecar.bench';
import { trendTargets, type BenchReport, type BenchRow } from './report';

const BENCHMARKS: Record<string, () => Promise<BenchReport>> = {
  policy: runPolicyBench,
  proxy: runProxyBench,
  pdp: runPdpBench,
  sdk: () => import('./sdk.bench').then((bench) => bench.runSdkBench()),
  analytics: runAnalyticsBench,
  sidecar: runSidecarBench,
  ingest: runIngestBench,
  alerts: runAlertsBench,
  mcp: runMcpBench,
  metrics: runMetricsBench,
  'decision-tokens': runDecisionTokensBench,
  bounded: runBoundedBench,
  soak: () => import('./soak.bench').then((bench) => bench.runSoakBench()),
};

/** Run only when named (`node dist/bench/run.js soak`): SOAK_MINUTES per entry point, half an hour by default. */
const NAMED_ONLY = new Set(['soak']);

const RESULTS_DIR = path.resolve(__dirname, '..', '..', 'bench', 'results');
const EXTRAS_WIDTH = 70;

interface Machine {
  node: string;
  platform: string;
  arch: string;
  cpus: number;
  cpuModel: string;
  totalMemoryGb: number;
  loadAverage: number[];
  hostname: string;
}

function machine(): Machine {
  const cpus = os.cpus();
  return {
    node: process.version,
    platform: `${os.type()} ${os.release()}`,
    arch: process.arch,
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    totalMemoryGb: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    loadAverage: os.loadavg().map((value) => Math.round(value * 100) / 100),
    hostname: os.hostname(),
  };
}

function formatNumber(value: number | undefined, digits = 0): string {
  if (value === undefined) return '-';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function extrasOf(row: BenchRow): string[] {
  const parts = Object.entries(row.extra ?? {}).map(([key, value]) => `${key}=${typeof value === 'number' ? formatNumber(value, Number.isInteger(value) ? 0 : 3) : value}`);
  const lines: string[] = [];
  let line = '';
  for (const part of parts) {
    if (line !== '' && line.length + 2 + part.length > EXTRAS_WIDTH) {
      lines.push(line);
      line = '';
    }
    line = line === '' ? part : `${line}  ${part}`;
  }
  if (line !== '') lines.push(line);
  return lines.length > 0 ? lines : [''];
}

/** The report as a plain-text table, then its targets and notes. */
export function formatReport(report: BenchReport): string {
  const header = ['subject', 'ops/s', 'p50 ms', 'p99 ms', 'extras'];
  const cells = report.rows.map((row) => [row.subject, formatNumber(row.opsPerSec), formatNumber(row.p50Ms, 3), formatNumber(row.p99Ms, 3)]);
  const widths = [0, 1, 2, 3].map((column) => Math.max(header[column].length, ...cells.map((cell) => cell[column].length)));
  const pad = (cell: string, column: number) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]));
  const out: string[] = [];
  const title = `=== ${report.name} ===`;
  out.push('', title);
  out.push([...header.slice(0, 4).map(pad), header[4]].join('  '));
  out.push([...widths.map((width) => '-'.repeat(width)), '-'.repeat(6)].join('  '));
  report.rows.forEach((row, index) => {
    const [first, ...more] = extrasOf(row);
    out.push([...cells[index].map(pad), first].join('  ').trimEnd());
    const indent = ' '.repeat(widths.reduce((sum, width) => sum + width + 2, 0));
    for (const line of more) out.push(indent + line);
  });
  if (report.targets.length > 0) {
    out.push('', 'targets:');
    for (const target of report.targets) out.push(`  ${target.pass ? 'PASS' : 'FAIL'}  ${target.description}\n        measured: ${target.measured}`);
  }
  if (report.notes && report.notes.length > 0) {
    out.push('', 'notes:');
    for (const note of report.notes) out.push(`  - ${note}`);
  }
  const failed = report.targets.filter((target) => !target.pass);
  if (failed.length > 0) {
    out.push('', `!!! ${report.name}: ${failed.length} of ${report.targets.length} target(s) FAILED:`);
    for (const target of failed) out.push(`!!!   ${target.description} (measured: ${target.measured})`);
  }
  return out.join('\n');
}

function writeResult(report: BenchReport, startedAt: Date, durationMs: number): string {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${report.name}.json`);
  const content = { ...report, machine: machine(), date: startedAt.toISOString(), durationMs, command: ['node', path.relative(process.cwd(), process.argv[1]), ...process.argv.slice(2)].join(' ') };
  fs.writeFileSync(file, `${JSON.stringify(content, null, 2)}\n`);
  return file;
}

async function main(): Promise<number> {
  const requested = process.argv.slice(2);
  const unknown = requested.filter((name) => !(name in BENCHMARKS));
  if (unknown.length > 0) {
    console.error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${Object.keys(BENCHMARKS).join(', ')}`);
    return 2;
  }
  const names = requested.length > 0 ? requested : Object.keys(BENCHMARKS).filter((name) => !NAMED_ONLY.has(name));
  const info = machine();
  console.log(`Benchmarks: ${names.join(', ')} on Node ${info.node}, ${info.cpus} x ${info.cpuModel}, load average ${info.loadAverage.join(' ')}`);
  const crashed: string[] = [];
  const failedTargets: string[] = [];
  for (const name of names) {
    console.log(`\nrunning ${name} ...`);
    const startedAt = new Date();
    try {
      const measured = await BENCHMARKS[name]();
      const report = { ...measured, targets: [...measured.targets, ...trendTargets(measured.rows)] };
      const durationMs = Date.now() - startedAt.getTime();
      console.log(formatReport(report));
      const file = writeResult(report, startedAt, durationMs);
      console.log(`\n(${name}: ${(durationMs / 1000).toFixed(1)} s; written to ${path.relative(process.cwd(), file)})`);
      failedTargets.push(...report.targets.filter((target) => !target.pass).map((target) => `${name}: ${target.description} (measured: ${target.measured})`));
    } catch (error) {
      crashed.push(name);
      console.error(`\n!!! benchmark ${name} crashed:`, error);
    }
  }
  console.log('');
  if (failedTargets.length > 0) {
    console.log(`!!! ${failedTargets.length} TARGET(S) FAILED:`);
    for (const line of failedTargets) console.log(`!!!   ${line}`);
  } else if (crashed.length < names.length) {
    console.log('All targets met.');
  }
  if (crashed.length > 0) {
    console.error(`!!! crashed: ${crashed.join(', ')}`);
    return 1;
  }
  return 0;
}

if (require.main === module) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
