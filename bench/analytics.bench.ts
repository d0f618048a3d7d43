/**
 * Analytics at volume (issue #14): two organizations' audit trails loaded in bulk on PostgreSQL
 * with generate_series (10 million entries over 30 days, and 100,000), the rollups computed from
 * those entries in SQL (`fillRollupsSql`, what a rebuild runs), and every Analytics endpoint
 * timed over HTTP against the gateway (`node dist/src/main.js`) at period 30d, for both
 * organizations in alternating rounds (so both volumes see the same machine).
 * Targets: each endpoint under 200 ms at 10 M entries, and within 2x of its own time at 100 k.
 * The bench creates and drops its own database. `node dist/bench/run.js analytics` runs it.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createDayPartition, dayStart } from '../src/gateway/audit/audit-days';
import { fillRollupsSql, ROLLUP_TABLES } from '../src/gateway/audit/audit-rollups';
import type { BenchReport, BenchRow, BenchTarget } from './report';
import { baseEnv, ChildSet, freePort, waitForHttp } from './servers/processes';
import { POSTGRES_URL, withAdminClient, withDatabase } from './proxy.bench';

const ROOT = path.resolve(__dirname, '..', '..');
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
/** The bootstrap organization (ADMIN_TOKEN's) holds the large data set. */
const LARGE_ORG_ID = 'org_default';
const DAY_MS = 86_400_000;
const SMALL = 100_000;
/** BENCH_ANALYTICS_ENTRIES overrides the large volume (a quick trial run); the targets are for 10 M. */
const LARGE = Number(process.env.BENCH_ANALYTICS_ENTRIES ?? 10_000_000);
/** Rows per INSERT … generate_series statement. */
const LOAD_CHUNK = 1_000_000;
/** The entries' time span: 30 days less 2 hours, so all lie in the 30 d period (whole hours, the current one included). */
const SPREAD_MS = 30 * DAY_MS - 2 * 3_600_000;
const AGENTS = 200;
const ACTIONS = 50;
const POLICIES = 20;
const WARMUP_ROUNDS = 2;
const TIMED_ROUNDS = 15;
const TARGET_MS = 200;
const MAX_GROWTH = 2;

const ENDPOINTS = [
  'overview?period=30d',
  'timeseries?period=30d',
  'timeseries?period=30d&bucket=day',
  'agents?period=30d',
  'agents?period=30d&sort=latency&limit=100',
  'policies?period=30d',
  'delegations?period=30d',
  'trust-distribution?period=30d',
  'latency-heatmap?period=30d',
];

interface Timing {
  medianMs: number;
  maxMs: number;
}

export async function runAnalyticsBench(): Promise<BenchReport> {
  const children = new ChildSet();
  const database = `agentgov_analytics_bench_${Date.now()}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-analytics-bench-'));
  await withAdminClient((client) => client.query(`CREATE DATABASE ${database}`));
  const db = new Client({ connectionString: withDatabase(POSTGRES_URL, database) });
  const notes: string[] = [];
  try {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = {
      ...baseEnv(),
      PORT: String(port),
      HOST: '127.0.0.1',
      PDP_GRPC_PORT: '0',
      ADMIN_TOKEN,
      DEFAULT_PLAN: 'enterprise',
      POLICIES_FILE: '/dev/null',
      LOG_LEVEL: 'warn',
      DATA_DIR: dataDir,
      DATABASE_URL: withDatabase(POSTGRES_URL, database),
    };
    const gateway = children.spawn('gateway', process.execPath, [path.join(ROOT, 'dist', 'src', 'main.js')], { cwd: ROOT, env });
    await waitForHttp(`${base}/health`, gateway, 120_000);
    const small = createOrganization(env, 'analytics bench 100k');
    const large: Tenant = { id: LARGE_ORG_ID, adminToken: ADMIN_TOKEN };
    await db.connect();
    const nowMs = Date.now();

    const largeLoad = await load(db, large.id, nowMs, LARGE);
    const largeRollup = await fillRollups(db, large.id);
    const smallLoad = await load(db, small.id, nowMs, SMALL);
    const smallRollup = await fillRollups(db, small.id);
    await checkTotal(base, small, SMALL);
    await checkTotal(base, large, LARGE);
    const timings = await timeEndpoints(base, small, large);
    const vacuums = await autovacuumWorkers(db);
    const sizes = await rollupSizes(db, large.id);

    notes.push(
      `Two organizations in one database: ${LARGE.toLocaleString('en-US')} entries, and ${SMALL.toLocaleString('en-US')}, each spread evenly over the last 30 days; ` +
        `${AGENTS} agents (tier by agent), ${ACTIONS} actions, ${POLICIES} policies, every 10th request delegated (depth 2), every 5th denied.`,
      `Load with INSERT … generate_series (chunks of ${LOAD_CHUNK.toLocaleString('en-US')}), then VACUUM ANALYZE (as autovacuum would, but before the timings): ` +
        `${LARGE.toLocaleString('en-US')} entries in ${seconds(largeLoad)}, ${SMALL.toLocaleString('en-US')} in ${seconds(smallLoad)}; ` +
        `rollups computed from the entries (fillRollupsSql) in ${seconds(largeRollup)} and ${seconds(smallRollup)}.`,
      `Rollup rows of the large organization: ${sizes}.`,
      `Each endpoint: ${WARMUP_ROUNDS} warm-up rounds, then ${TIMED_ROUNDS} rounds alternating the two organizations (which goes first alternates too), one HTTP call each; ` +
        'p50 is the median call, p99 the slowest.',
      `Autovacuum workers busy right after the timings: ${vacuums}; load average at the end ${os.loadavg().map((value) => value.toFixed(2)).join(' ')} on ${os.cpus().length} CPUs.`,
    );
    const rows: BenchRow[] = [];
    const targets: BenchTarget[] = [];
    for (const endpoint of ENDPOINTS) {
      const { small: a, large: b } = timings.get(endpoint)!;
      rows.push(row(`${endpoint} @100k`, a), row(`${endpoint} @10M`, b));
      targets.push({ description: `GET /admin/analytics/${endpoint} at 10 M entries under ${TARGET_MS} ms`, measured: `${b.medianMs.toFixed(1)} ms`, pass: b.medianMs < TARGET_MS });
      targets.push({
        description: `GET /admin/analytics/${endpoint} at 10 M within ${MAX_GROWTH}x of 100 k`,
        measured: `${b.medianMs.toFixed(1)} ms vs ${a.medianMs.toFixed(1)} ms (${(b.medianMs / a.medianMs).toFixed(2)}x)`,
        pass: b.medianMs <= MAX_GROWTH * a.medianMs,
      });
    }
    return { name: 'analytics', rows, targets, notes };
  } finally {
    await db.end().catch(() => undefined);
    await children.stopAll();
    await withAdminClient((client) => client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)).catch((error: unknown) => console.error(`could not drop ${database}:`, error));
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

interface Tenant {
  id: string;
  adminToken: string;
}

/** A second organization, created the way an operator does: `ags orgs create`. */
function createOrganization(env: NodeJS.ProcessEnv, name: string): Tenant {
  const result = spawnSync(process.execPath, [path.join(ROOT, 'dist', 'src', 'cli', 'main.js'), 'orgs', 'create', '--name', name, '--plan', 'enterprise'], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  const field = (key: string) => new RegExp(`^${key}: (\\S+)$`, 'm').exec(result.stdout)?.[1];
  const id = field('id');
  const adminToken = field('adminToken');
  if (result.status !== 0 || id === undefined || adminToken === undefined) throw new Error(`ags orgs create failed (${result.status}): ${result.stderr}`);
  return { id, adminToken };
}

/**
 * `count` entries of `orgId`, in chunks: entry i lies i / count of SPREAD_MS before `nowMs`, so
 * they cover the 30 days evenly.
 */
async function load(db: Client, orgId: string, nowMs: number, count: number): Promise<number> {
  const started = Date.now();
  const sql = { query: async <T>(text: string, params?: unknown[]) => (await db.query(text, params)).rows as T[] };
  for (let day = dayStart(nowMs - 31 * DAY_MS); day <= nowMs; day += DAY_MS) await createDayPartition(sql, day);
  for (let first = 1; first <= count; first += LOAD_CHUNK) {
    const last = Math.min(count, first + LOAD_CHUNK - 1);
    await db.query(
      `INSERT INTO audit_entries (id, ts, org_id, seq, source, kind, trace_id, agent_id, agent_name, trust_tier, action, method, path, decision,
         enforced, rate_limited, policy_name, rule, reason, decision_latency_ms, latency_ms, status, upstream_status, delegation_chain, input, details, prev_hash, hash)
       SELECT $2 || '_' || i, $1::timestamptz - (i * $3::double precision) * interval '1 millisecond', $4, i,
         (ARRAY['proxy', 'pdp', 'check', 'sidecar', 'mcp'])[1 + i % 5], 'decision', NULL,
         'agent_' || (i % ${AGENTS}), 'agent ' || (i % ${AGENTS}), (ARRAY['unverified', 'verified', 'trusted', 'privileged'])[1 + (i % ${AGENTS}) % 4],
         'read:resource_' || (i % ${ACTIONS}), 'GET', '/resource', CASE WHEN i % 5 = 0 THEN 'deny' ELSE 'allow' END,
         true, false, 'policy_' || (i % ${POLICIES}), CASE WHEN i % 3 = 0 THEN NULL ELSE 'policy_' || (i % ${POLICIES}) || '#0' END, NULL,
         0.05, 1 + (i % 1000) / 10.0, 200, 200,
         CASE WHEN i % 10 = 0 THEN json_build_array('agent_' || ((i + 1) % ${AGENTS}), 'agent_' || (i % ${AGENTS})) END,
         NULL, NULL, '', ''
       FROM generate_series($5::bigint, $6::bigint) AS i`,
      [new Date(nowMs), `aud_${orgId}`, SPREAD_MS / count, orgId, first, last],
    );
  }
  // Vacuumed now rather than by autovacuum while the endpoints are timed (a fresh bulk load
  // triggers it): the steady state of a table written to over 30 days.
  await db.query('VACUUM (ANALYZE) audit_entries');
  return Date.now() - started;
}

async function fillRollups(db: Client, orgId: string): Promise<number> {
  const started = Date.now();
  await db.query('BEGIN');
  for (const sql of fillRollupsSql(`e.org_id = '${orgId}'`)) await db.query(sql);
  await db.query('COMMIT');
  for (const table of ROLLUP_TABLES) await db.query(`VACUUM ANALYZE ${table}`);
  return Date.now() - started;
}

/** Each endpoint for both organizations, in alternating rounds, so both see the same machine. */
async function timeEndpoints(base: string, small: Tenant, large: Tenant): Promise<Map<string, { small: Timing; large: Timing }>> {
  const timings = new Map<string, { small: Timing; large: Timing }>();
  for (const endpoint of ENDPOINTS) {
    const times = { small: [] as number[], large: [] as number[] };
    for (let round = 0; round < WARMUP_ROUNDS + TIMED_ROUNDS; round++) {
      const order = round % 2 === 0 ? (['small', 'large'] as const) : (['large', 'small'] as const);
      for (const size of order) {
        const ms = await timeCall(`${base}/admin/analytics/${endpoint}`, size === 'small' ? small : large);
        if (round >= WARMUP_ROUNDS) times[size].push(ms);
      }
    }
    timings.set(endpoint, { small: summary(times.small), large: summary(times.large) });
  }
  return timings;
}

async function timeCall(url: string, tenant: Tenant): Promise<number> {
  const started = process.hrtime.bigint();
  const response = await fetch(url, { headers: { 'x-admin-token': tenant.adminToken } });
  const body = await response.text();
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${body}`);
  return ms;
}

function summary(times: number[]): Timing {
  const sorted = [...times].sort((a, b) => a - b);
  return { medianMs: sorted[Math.floor(sorted.length / 2)], maxMs: sorted[sorted.length - 1] };
}

/** The data set is all there: the 30 days hold every entry loaded. */
async function checkTotal(base: string, tenant: Tenant, entries: number): Promise<void> {
  const response = await fetch(`${base}/admin/analytics/overview?period=30d`, { headers: { 'x-admin-token': tenant.adminToken } });
  const total = ((await response.json()) as { totalRequests: number }).totalRequests;
  if (total !== entries) throw new Error(`overview of ${tenant.id} counts ${total} requests, expected ${entries}`);
}

async function autovacuumWorkers(db: Client): Promise<number> {
  const { rows } = await db.query<{ count: string }>(`SELECT count(*) AS count FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'`);
  return Number(rows[0].count);
}

async function rollupSizes(db: Client, orgId: string): Promise<string> {
  const sizes: string[] = [];
  for (const table of ROLLUP_TABLES) {
    const { rows } = await db.query<{ count: string }>(`SELECT count(*) AS count FROM ${table} WHERE org_id = $1`, [orgId]);
    sizes.push(`${table} ${Number(rows[0].count).toLocaleString('en-US')}`);
  }
  return sizes.join(', ');
}

function row(subject: string, timing: Timing): BenchRow {
  return { subject, opsPerSec: Math.round(1000 / timing.medianMs), p50Ms: timing.medianMs, p99Ms: timing.maxMs };
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
