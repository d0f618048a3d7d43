/**
 * How fast the gateway takes in a sidecar's audit entries (`POST /api/v1/audit/ingest`): batches
 * of BATCH new entries, each a line as a sidecar's write-ahead log holds it (`walLine`), posted
 * one at a time as the sidecar's forwarder does, for WINDOWS windows of WINDOW_SECONDS, after a
 * warm-up. No issue sets a target; the rows tell an operator how many decisions a second one
 * sidecar may sustain before its buffer grows (ingestion is serialised per sidecar).
 *
 * The gateway is the PDP bench's (`startGateway`: as users start it, on a fresh PostgreSQL
 * database, the embedded one when PostgreSQL is unreachable); every entry is checked to have
 * been written once (the fleet status's `received`).
 *
 * `node dist/bench/ingest.bench.js` runs it alone. Environment: BENCH_INGEST_BATCH (500),
 * BENCH_INGEST_WINDOWS (5), BENCH_INGEST_WINDOW_SECONDS (10), BENCH_POSTGRES_URL.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHistogram } from 'node:perf_hooks';
import type { AuditRecord } from '../src/core/audit-record/audit-record';
import { AuditSanitizer } from '../src/core/audit-record/audit-sanitizer';
import { walLine } from '../src/sidecar/wal-line';
import { startGateway } from './pdp.bench';
import { ADMIN_TOKEN, createDatabase, dropDatabase, guardAgainstInterrupt, positiveNumber, POSTGRES_URL, redact, waitForAuditDrain } from './proxy.bench';
import type { BenchReport, BenchRow } from './report';
import { ChildSet, cpuSeconds } from './servers/processes';

const BATCH = positiveNumber('BENCH_INGEST_BATCH', 500);
const WINDOWS = positiveNumber('BENCH_INGEST_WINDOWS', 5);
const WINDOW_SECONDS = positiveNumber('BENCH_INGEST_WINDOW_SECONDS', 10);
const WARMUP_BATCHES = 20;
const SIDECAR_ID = 'sc_bench-ingest';

/** The ingest benchmark: one row per window. */
export async function runIngestBench(): Promise<BenchReport> {
  const children = new ChildSet();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-ingest-bench-'));
  let database: string | null = null;
  const releaseGuard = guardAgainstInterrupt('ingest', children, tmp, () => database);
  const notes: string[] = [];
  try {
    database = await createDatabase().catch((error: unknown) => {
      notes.push(`PostgreSQL not reachable at ${redact(POSTGRES_URL)} (${error instanceof Error ? error.message : String(error)}): the gateway ran on the embedded database.`);
      return null;
    });
    const { child: gateway, base } = await startGateway(children, tmp, database, undefined);

    const batches = new BatchMaker();
    for (let index = 0; index < WARMUP_BATCHES; index++) await post(base, batches.next());
    const rows: BenchRow[] = [];
    for (let window = 1; window <= WINDOWS; window++) rows.push(await measureWindow(base, batches, window, gateway.process.pid));
    await waitForAuditDrain(base, gateway);
    const received = await receivedBySidecar(base);
    if (received !== batches.sent) throw new Error(`the gateway holds ${received} of the ${batches.sent} entries sent`);
    notes.push(`Every entry sent (${batches.sent.toLocaleString('en-US')}, warm-up included) was received once (GET /admin/sidecars: received).`);
    return {
      name: 'ingest',
      rows,
      targets: [],
      notes: [
        `Node ${process.version}; ${os.cpus().length} CPUs; loopback; gateway on ${database === null ? 'the embedded database' : 'PostgreSQL'}, audit on.`,
        `Batches of ${BATCH} new entries (${batches.lineBytes} bytes a line, as a sidecar's write-ahead log holds it), one at a time, for ${WINDOWS} windows of ${WINDOW_SECONDS} s after ${WARMUP_BATCHES} warm-up batches; ` +
          'p50/p99 are per batch (its POST, the audit write it waits for, its sequence bookkeeping); gatewayCpuUsPerEntry is the gateway process’s CPU per entry.',
        ...notes,
      ],
    };
  } finally {
    await children.stopAll();
    releaseGuard();
    if (database !== null) await dropDatabase(database).catch((error: unknown) => console.error(`could not drop bench database ${database}:`, error));
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** Bodies of new entries, numbered on from the last. */
class BatchMaker {
  sent = 0;
  readonly lineBytes: number;
  private readonly clean = new AuditSanitizer(['password', 'secret', 'token', 'authorization', 'api_key']);
  private readonly opening = `{"sidecarId":"${SIDECAR_ID}","entries":[`;

  constructor() {
    this.lineBytes = Buffer.byteLength(this.line(1));
  }

  next(): string {
    const lines: string[] = [];
    for (let index = 0; index < BATCH; index++) lines.push(this.line(++this.sent).trimEnd());
    return `${this.opening}${lines.join(',')}]}`;
  }

  private line(seq: number): string {
    return walLine(seq, record(seq), '{"resource":"docs/report.pdf","plugin":"http","function":"read","args":{"path":"/docs/report.pdf"},"context":{"args":{"path":"/docs/report.pdf"}}}', this.clean);
  }
}

function record(seq: number): AuditRecord {
  return {
    id: `aud_bench${String(seq).padStart(16, '0')}`,
    ts: Date.now(),
    orgId: 'org_default',
    source: 'sidecar',
    kind: 'decision',
    traceId: '0af7651916cd43dd8448eb211c80319c',
    agentId: 'agent_bench0123456789abcdef',
    agentName: 'bench-agent',
    trustTier: 'verified',
    action: 'read:docs/report.pdf',
    method: null,
    path: null,
    decision: seq % 5 === 0 ? 'deny' : 'allow',
    enforced: true,
    rateLimited: false,
    policyName: 'default',
    rule: null,
    reason: 'Allowed by default',
    decisionLatencyMs: 0.012,
    latencyMs: 0.2,
    status: seq % 5 === 0 ? 403 : 200,
    upstreamStatus: null,
    delegationChain: null,
    input: null,
    details: null,
  };
}

async function measureWindow(base: string, batches: BatchMaker, window: number, pid: number | undefined): Promise<BenchRow> {
  const latencyUs = createHistogram();
  const cpuBefore = cpuSeconds(pid);
  const from = batches.sent;
  const started = performance.now();
  while (performance.now() - started < WINDOW_SECONDS * 1000) {
    const body = batches.next();
    const sent = performance.now();
    await post(base, body);
    latencyUs.record(Math.max(1, Math.round((performance.now() - sent) * 1000)));
  }
  const seconds = (performance.now() - started) / 1000;
  const entries = batches.sent - from;
  const cpuAfter = cpuSeconds(pid);
  const extra: Record<string, number | string> = { entries, batches: entries / BATCH };
  if (cpuBefore !== null && cpuAfter !== null) extra.gatewayCpuUsPerEntry = Math.round(((cpuAfter - cpuBefore) / entries) * 1e6);
  return {
    subject: `ingest, window ${window} (entries/s)`,
    opsPerSec: Math.round(entries / seconds),
    p50Ms: latencyUs.percentile(50) / 1000,
    p99Ms: latencyUs.percentile(99) / 1000,
    extra,
  };
}

async function post(base: string, body: string): Promise<void> {
  const response = await fetch(`${base}/api/v1/audit/ingest`, { method: 'POST', headers: { 'x-admin-token': ADMIN_TOKEN, 'content-type': 'application/json' }, body });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`POST /api/v1/audit/ingest answered ${response.status}: ${text.slice(0, 300)}`);
  const answer = JSON.parse(text) as { accepted?: number };
  if (answer.accepted !== BATCH) throw new Error(`POST /api/v1/audit/ingest accepted ${answer.accepted} of ${BATCH} new entries: ${text.slice(0, 300)}`);
}

async function receivedBySidecar(base: string): Promise<number> {
  const response = await fetch(`${base}/admin/sidecars`, { headers: { 'x-admin-token': ADMIN_TOKEN } });
  const list = (await response.json()) as { sidecars: Array<{ id: string; received: number }> };
  return list.sidecars.find((sidecar) => sidecar.id === SIDECAR_ID)?.received ?? 0;
}

if (require.main === module) {
  runIngestBench().then(
    (report) => console.log(JSON.stringify(report, null, 2)),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
