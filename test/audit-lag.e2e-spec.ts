import { Client } from 'pg';
import { GatewayProcess, gatewayReady, killGateway, launchGateway } from './support/gateway-process';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { freePort } from './support/processes';
import { TcpRelay } from './support/tcp-relay';
import { TEST_ADMIN_TOKEN, testEnv } from './support/test-gateway';

/**
 * The audit writer under steady traffic while its database fails for a moment (issue #30): a
 * failed write is retried on its own schedule, not put off by every request that arrives, so the
 * decisions answered meanwhile reach the trail within seconds of the database's return, while the
 * traffic goes on; and /health shows the lag, answering 503 `degraded` past AUDIT_LAG_MAX_MS.
 *
 * The gateway runs as users run it (`node dist/src/main.js`), reaching its own database through
 * a TCP relay that the test closes (connections cut, new ones refused) and opens again: a
 * database restart, the same on the PGlite and the PostgreSQL runs of the suite.
 */

const LAG_MAX_MS = 500;
/** About 100 decisions a second. */
const TRAFFIC_INTERVAL_MS = 10;
/** How soon after the database is back the trail must hold every decision answered. */
const CATCH_UP_MS = 5000;

interface HealthBody {
  status: string;
  database: { status: string };
  audit: { pending: number; oldestUnwrittenMs: number | null; lagMaxMs: number; lastWriteFailure: string | null };
  degradedReason: string | null;
}

interface HealthSample {
  /** When the request was sent, and when its answer came. */
  sentMs: number;
  atMs: number;
  httpStatus: number;
  body: HealthBody;
}

let database: OwnDatabase;
let relay: TcpRelay;
let gateway: GatewayProcess;
let agentId: string;
let apiKey: string;

beforeAll(async () => {
  database = await ownDatabase();
  const url = new URL(database.url);
  relay = await TcpRelay.listen(await freePort(), Number(url.port));
  url.port = String(relay.port);
  gateway = await launchGateway(testEnv({ DATABASE_URL: url.toString(), AUDIT_LAG_MAX_MS: String(LAG_MAX_MS), LOG_LEVEL: 'info' }));
  await gatewayReady(gateway);
  const agent = await call<{ id: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: TEST_ADMIN_TOKEN, body: { name: 'steady-agent' } });
  expect(agent.status).toBe(201);
  agentId = agent.body.id;
  const key = await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: TEST_ADMIN_TOKEN, body: { name: 'steady key' } });
  expect(key.status).toBe(201);
  apiKey = key.body.key;
});

afterAll(async () => {
  if (gateway) await killGateway(gateway);
  await relay?.close();
  await database?.dispose();
});

/** One /v1/check every TRAFFIC_INTERVAL_MS, each with its own trace id; remembers when each decision was answered. */
class SteadyTraffic {
  /** Trace id → when its decision was answered (200 or 403). */
  readonly answered = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private sent = 0;

  constructor(private readonly prefix: string) {}

  start(): void {
    this.timer = setInterval(() => this.send(), TRAFFIC_INTERVAL_MS);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await Promise.all(this.inFlight);
  }

  /** Trace ids of the decisions answered before `ms`. */
  answeredBefore(ms: number): string[] {
    return [...this.answered].filter(([, at]) => at < ms).map(([traceId]) => traceId);
  }

  private send(): void {
    const traceId = `${this.prefix}-${++this.sent}`;
    const request = call(gateway.url, 'POST', '/v1/check', {
      body: { agentId, plugin: 'FilePlugin', function: 'ReadFile' },
      headers: { 'x-api-key': apiKey, 'x-trace-id': traceId },
      timeoutMs: 10_000,
    })
      .then((response) => {
        if (response.status === 200 || response.status === 403) this.answered.set(traceId, Date.now());
      })
      .catch(() => undefined)
      .finally(() => this.inFlight.delete(request));
    this.inFlight.add(request);
  }
}

/** /health every 100 ms until stopped. */
class HealthWatch {
  readonly samples: HealthSample[] = [];
  private running = true;
  private readonly loop: Promise<void>;

  constructor() {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  private async run(): Promise<void> {
    while (this.running) {
      const sentMs = Date.now();
      const response = await call<HealthBody>(gateway.url, 'GET', '/health', { timeoutMs: 5000 }).catch(() => null);
      if (response !== null) this.samples.push({ sentMs, atMs: Date.now(), httpStatus: response.status, body: response.body });
      await sleep(100);
    }
  }
}

/** Trace ids of the `/v1/check` decisions in the trail whose trace id starts with `prefix`. */
async function traceIdsInTrail(prefix: string): Promise<Set<string>> {
  const found = new Set<string>();
  let cursor: string | null = null;
  do {
    const page: { status: number; body: { entries: Array<{ traceId: string | null }>; nextCursor: string | null } } = await call(
      gateway.url,
      'GET',
      `/admin/audit?source=check&limit=1000${cursor === null ? '' : `&cursor=${cursor}`}`,
      { adminToken: TEST_ADMIN_TOKEN, timeoutMs: 10_000 },
    );
    expect(page.status).toBe(200);
    for (const entry of page.body.entries) if (entry.traceId?.startsWith(`${prefix}-`)) found.add(entry.traceId);
    cursor = page.body.nextCursor;
  } while (cursor !== null);
  return found;
}

/**
 * Waits, while the traffic goes on, until every decision answered before `sinceMs` is in the
 * trail; returns those still missing at the deadline (none when the writer caught up).
 */
async function missingAfterCatchUp(traffic: SteadyTraffic, prefix: string, sinceMs: number): Promise<string[]> {
  const expected = traffic.answeredBefore(sinceMs);
  expect(expected.length).toBeGreaterThan(50);
  const deadline = sinceMs + CATCH_UP_MS;
  for (;;) {
    const inTrail = await traceIdsInTrail(prefix).catch(() => new Set<string>());
    const missing = expected.filter((traceId) => !inTrail.has(traceId));
    if (missing.length === 0 || Date.now() > deadline) return missing;
    await sleep(200);
  }
}

async function healthyAgain(): Promise<HealthSample> {
  const deadline = Date.now() + CATCH_UP_MS;
  for (;;) {
    const sentMs = Date.now();
    const response = await call<HealthBody>(gateway.url, 'GET', '/health', { timeoutMs: 5000 });
    if (response.status === 200 || Date.now() > deadline) return { sentMs, atMs: Date.now(), httpStatus: response.status, body: response.body };
    await sleep(100);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

it('catches up within seconds of a 1 s database outage under steady traffic, with /health showing the lag meanwhile', async () => {
  const prefix = `outage-${Date.now()}`;
  const traffic = new SteadyTraffic(prefix);
  const health = new HealthWatch();
  traffic.start();
  let downAt = 0;
  let backAt = 0;
  try {
    await sleep(1000);
    downAt = Date.now();
    await relay.close();
    await sleep(1000);
    await relay.open();
    backAt = Date.now();

    // Still under traffic: a retry that every arriving request put back would never come.
    const missing = await missingAfterCatchUp(traffic, prefix, backAt);
    expect({ missing: missing.length, of: traffic.answeredBefore(backAt).length }).toEqual({ missing: 0, of: traffic.answeredBefore(backAt).length });
    const recovered = await healthyAgain();
    expect(recovered.httpStatus).toBe(200);
    expect(recovered.body.status).toBe('healthy');
    expect(recovered.body.audit.oldestUnwrittenMs ?? 0).toBeLessThan(LAG_MAX_MS);
    expect(recovered.body.audit.lastWriteFailure).not.toBeNull();
  } finally {
    await Promise.all([traffic.stop(), health.stop()]);
  }

  // While the database was away /health answered 503, and showed the audit trail falling behind.
  const samples = health.samples.filter((sample) => sample.sentMs > downAt && sample.atMs < backAt);
  expect(samples.length).toBeGreaterThan(0);
  expect(samples.filter((sample) => sample.httpStatus !== 503)).toEqual([]);
  const lagging = samples.filter((sample) => (sample.body.audit.oldestUnwrittenMs ?? 0) > LAG_MAX_MS);
  expect(lagging[0]?.body).toMatchObject({ status: 'unhealthy', database: { status: 'down' }, degradedReason: expect.stringContaining('AUDIT_LAG_MAX_MS') });
});

it('answers 503 degraded while audit writes fail with the database up, and writes every entry within seconds once they succeed', async () => {
  const prefix = `refused-${Date.now()}`;
  // The database answers (SELECT 1) but refuses the audit trail's writes, as a full disk would.
  const admin = new Client({ connectionString: database.url });
  await admin.connect();
  const traffic = new SteadyTraffic(prefix);
  traffic.start();
  try {
    await sleep(500);
    await admin.query(`CREATE FUNCTION refuse_audit_write() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = '53100'; END $$`);
    await admin.query('CREATE TRIGGER refuse_audit_write BEFORE INSERT OR UPDATE ON audit_chain_heads FOR EACH ROW EXECUTE FUNCTION refuse_audit_write()');
    const refusedAt = Date.now();

    let degraded: HealthSample | null = null;
    while (degraded === null && Date.now() < refusedAt + 5000) {
      const sentMs = Date.now();
      const response = await call<HealthBody>(gateway.url, 'GET', '/health', { timeoutMs: 5000 });
      if (response.status === 503) degraded = { sentMs, atMs: Date.now(), httpStatus: response.status, body: response.body };
      else await sleep(100);
    }
    expect(degraded?.body).toMatchObject({
      status: 'degraded',
      database: { status: 'up' },
      audit: { lagMaxMs: LAG_MAX_MS, lastWriteFailure: expect.any(String) },
      degradedReason: expect.stringContaining('AUDIT_LAG_MAX_MS'),
    });
    expect(degraded!.body.audit.oldestUnwrittenMs).toBeGreaterThan(LAG_MAX_MS);
    expect(degraded!.body.audit.pending).toBeGreaterThan(0);

    await sleep(1000);
    await admin.query('DROP TRIGGER refuse_audit_write ON audit_chain_heads');
    await admin.query('DROP FUNCTION refuse_audit_write()');
    const writableAt = Date.now();

    const missing = await missingAfterCatchUp(traffic, prefix, writableAt);
    expect({ missing: missing.length, of: traffic.answeredBefore(writableAt).length }).toEqual({ missing: 0, of: traffic.answeredBefore(writableAt).length });
    const recovered = await healthyAgain();
    expect(recovered.httpStatus).toBe(200);
    expect(recovered.body).toMatchObject({ status: 'healthy', degradedReason: null });
  } finally {
    await traffic.stop();
    await admin.query('DROP TRIGGER IF EXISTS refuse_audit_write ON audit_chain_heads').catch(() => undefined);
    await admin.end();
  }
});
