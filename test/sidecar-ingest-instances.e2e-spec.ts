import { Client } from 'pg';
import { AlertReceiver, ReceivedRequest, startAlertReceiver } from './support/alert-receivers';
import { call, TestResponse } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { eventually } from './support/processes';
import { createOrganization, startGateway, testDatabaseKind, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * A sidecar's audit batch that reaches the gateway twice at once: its request timed out (a slow
 * database) and the forwarder sent the same batch again, to the same instance or, behind a load
 * balancer, to another one, while the first was still at work. Each entry must be in the trail
 * once, the hash chain must verify, a denial must raise its alert once, and both attempts must
 * answer 200 with the sidecar's numbers recorded, whatever instance the retry reaches
 * (docs/architecture.md "Edge sidecar").
 *
 * Two instances need PostgreSQL: the embedded database serves one process, and PGlite behind the
 * test server runs one transaction at a time, so one instance cannot be held in the middle of a
 * transaction while the other works (revocation.e2e-spec.ts runs its LISTEN/NOTIFY case the same
 * way). The database is slowed by a transaction of the test holding a row the ingestion needs.
 */

interface IngestAnswer {
  accepted: number;
  duplicates: number;
  renumbered: number;
  refused: number;
  lastSeq: number;
}

/** The edge time of this run's entries: a resend carries the same time and id. */
const EDGE_TS = Date.now();

function entry(sidecarId: string, seq: number, decision: 'allow' | 'deny' = 'allow') {
  return {
    seq,
    id: `aud_${sidecarId.replace(/[^a-z0-9]/gi, '')}x${seq}x${EDGE_TS}`,
    ts: EDGE_TS + seq,
    traceId: `${sidecarId}-${EDGE_TS}-${seq}`,
    agentId: 'agent_edge',
    agentName: 'edge',
    trustTier: 'verified',
    action: `read:${sidecarId}/${seq}`,
    decision,
    enforced: true,
    rateLimited: false,
    policyName: 'edge-policy',
    rule: decision === 'deny' ? 'no-secrets' : null,
    reason: decision === 'deny' ? 'No secrets at the edge' : null,
    decisionLatencyMs: 0.01,
    latencyMs: 0.2,
    status: decision === 'deny' ? 403 : 200,
    input: { resource: `${sidecarId}/${seq}` },
  };
}

/** The batch the sidecar sends, then sends again after its request timed out: entry 3 a denial. */
function batch(sidecarId: string) {
  return { sidecarId, entries: [entry(sidecarId, 2), entry(sidecarId, 3, 'deny'), entry(sidecarId, 4)] };
}

function alertEnv(receiver: AlertReceiver, label: string): Record<string, string> {
  return {
    ALERT_ON: 'deny',
    ALERT_WEBHOOK_URL: `${receiver.url}/alerts`,
    ALERT_RATE_LIMIT: '1000',
    ALERT_ENVIRONMENT: `e2e-ingest-${label}-${process.pid}-${Date.now()}`,
  };
}

const ingest = (gateway: TestGateway, org: TestOrganization, body: unknown) =>
  call<IngestAnswer>(gateway.url, 'POST', '/api/v1/audit/ingest', { adminToken: org.adminToken, body });

/** The first batch of the sidecar (entry 1), written before the test slows the database. */
async function firstBatch(gateway: TestGateway, org: TestOrganization, sidecarId: string): Promise<void> {
  const answer = await ingest(gateway, org, { sidecarId, entries: [entry(sidecarId, 1)] });
  expect(answer.status).toBe(200);
  expect(answer.body.accepted).toBe(1);
}

function answersOf(answers: Array<TestResponse<IngestAnswer>>): Array<[number, unknown]> {
  return answers.map((answer) => [answer.status, answer.status === 200 ? answer.body.lastSeq : answer.body]);
}

/** The sidecar as the fleet status shows it: every number received, no gap. */
async function expectAllReceived(gateway: TestGateway, org: TestOrganization, sidecarId: string): Promise<void> {
  const sidecars = await call<{ sidecars: Array<Record<string, unknown>> }>(gateway.url, 'GET', '/admin/sidecars', { adminToken: org.adminToken });
  expect(sidecars.body.sidecars.find((sidecar) => sidecar.id === sidecarId)).toMatchObject({ lastSeq: 4, received: 4, gaps: [], renumbered: 0 });
}

/** Each entry of the sidecar once in the trail, a chain that verifies, and the denial alerted once. */
async function expectWrittenOnce(gateway: TestGateway, org: TestOrganization, sidecarId: string, receiver: AlertReceiver, answers: Array<TestResponse<IngestAnswer>>): Promise<void> {
  expect(answers.reduce((sum, answer) => sum + answer.body.accepted, 0)).toBe(3);
  const page = await call<{ entries: Array<{ action: string }> }>(gateway.url, 'GET', '/admin/audit?source=sidecar&limit=100', { adminToken: org.adminToken });
  const actions = page.body.entries.map((row) => row.action).filter((action) => action.startsWith(`read:${sidecarId}/`));
  expect(actions.sort()).toEqual([1, 2, 3, 4].map((seq) => `read:${sidecarId}/${seq}`));
  const verify = await call(gateway.url, 'GET', '/admin/audit/verify', { adminToken: org.adminToken });
  expect(verify.body).toMatchObject({ ok: true, brokenAt: null });
  const denial = (request: ReceivedRequest) => (request.json.entry as Record<string, unknown> | undefined)?.traceId === `${sidecarId}-${EDGE_TS}-3`;
  expect(await receiver.waitFor(1, denial)).toHaveLength(1);
  // An alert raised twice would arrive within the alert batching interval.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  expect(receiver.accepted(denial)).toHaveLength(1);
}

let receiver: AlertReceiver;

beforeAll(async () => {
  receiver = await startAlertReceiver();
});
afterAll(() => receiver?.close());

describe('one instance', () => {
  let gateway: TestGateway;
  let org: TestOrganization;

  beforeAll(async () => {
    gateway = await startGateway(alertEnv(receiver, 'one'));
    org = await createOrganization(gateway, 'enterprise', 'Ingest once org');
  });
  afterAll(() => gateway?.close());

  it('writes a batch sent twice at once one time, and raises its alert once', async () => {
    await firstBatch(gateway, org, 'sc_once-one');
    const answers = await Promise.all([ingest(gateway, org, batch('sc_once-one')), ingest(gateway, org, batch('sc_once-one'))]);
    expect(answersOf(answers)).toEqual([
      [200, 4],
      [200, 4],
    ]);
    await expectAllReceived(gateway, org, 'sc_once-one');
    await expectWrittenOnce(gateway, org, 'sc_once-one', receiver, answers);
  });
});

// Declared on PostgreSQL only (see above), not skipped: a skipped test fails the run.
if (testDatabaseKind() === 'postgres') describe('two instances on PostgreSQL', twoInstances);

function twoInstances(): void {
  let database: OwnDatabase;
  let a: TestGateway;
  let b: TestGateway;
  let org: TestOrganization;
  /** Watches the database's sessions, outside any transaction (a transaction sees a snapshot of them). */
  let observer: Client;
  const blockers: Client[] = [];

  beforeAll(async () => {
    database = await ownDatabase();
    a = await startGateway({ ...alertEnv(receiver, 'a'), DATABASE_URL: database.url });
    b = await startGateway({ ...alertEnv(receiver, 'b'), DATABASE_URL: database.url });
    org = await createOrganization(a, 'enterprise', 'Ingest twice org');
    observer = new Client({ connectionString: database.url });
    await observer.connect();
  });
  afterAll(async () => {
    for (const blocker of blockers) await blocker.end().catch(() => undefined);
    await observer?.end().catch(() => undefined);
    await a?.close();
    await b?.close();
    // The cluster-event listener's reconnect timer fires up to 1 s after close (service.e2e-spec.ts).
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await database?.dispose();
  });

  /** A slow database: a transaction of the test locks the row `lockSql` selects, until the returned release. */
  async function holdRow(lockSql: string, params: unknown[]): Promise<() => Promise<void>> {
    const blocker = new Client({ connectionString: database.url });
    blockers.push(blocker);
    await blocker.connect();
    await blocker.query('BEGIN');
    expect((await blocker.query(lockSql, params)).rowCount).toBe(1);
    return async () => {
      await blocker.query('COMMIT');
    };
  }

  /** Resolves once `sessions` sessions of the database are waiting for a lock. */
  async function lockWaiters(sessions: number, what: string): Promise<void> {
    await eventually(
      async () => {
        const rows = await observer.query<{ waiting: string }>("SELECT count(*) AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
        return Number(rows.rows[0].waiting) >= sessions;
      },
      15_000,
      what,
    );
  }

  it('records the numbers of a batch two instances took at once, and answers 200 on both', async () => {
    await firstBatch(a, org, 'sc_ranges-two');
    const release = await holdRow('SELECT id FROM sidecars WHERE org_id = $1 AND id = $2 FOR UPDATE', [org.id, 'sc_ranges-two']);
    const first = ingest(a, org, batch('sc_ranges-two'));
    await lockWaiters(1, 'instance A recording the numbers');
    // The sidecar's request timed out; its retry reaches instance B.
    const retry = ingest(b, org, batch('sc_ranges-two'));
    await lockWaiters(2, 'instance B recording the numbers');
    await release();

    expect(answersOf(await Promise.all([first, retry]))).toEqual([
      [200, 4],
      [200, 4],
    ]);
    await expectAllReceived(b, org, 'sc_ranges-two');
  });

  it('writes a batch whose retry reached another instance while the first was writing one time, and raises its alert once', async () => {
    await firstBatch(a, org, 'sc_once-two');
    // As a long write of another instance holds it: the organization's chain head.
    const release = await holdRow('SELECT seq FROM audit_chain_heads WHERE org_id = $1 FOR UPDATE', [org.id]);
    const first = ingest(a, org, batch('sc_once-two'));
    await lockWaiters(1, 'instance A writing the batch');
    // The sidecar's request timed out; its retry reaches instance B.
    const retry = ingest(b, org, batch('sc_once-two'));
    await lockWaiters(2, 'instance B writing the batch');
    await release();

    const answers = await Promise.all([first, retry]);
    expect(answersOf(answers)).toEqual([
      [200, 4],
      [200, 4],
    ]);
    await expectAllReceived(b, org, 'sc_once-two');
    await expectWrittenOnce(b, org, 'sc_once-two', receiver, answers);
  });
}
