import { Client } from 'pg';
import { GatewayProcess, gatewayReady, killGateway, launchGateway, within } from './support/gateway-process';
import { HalfSentRequest } from './support/half-sent-request';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { eventually, freePort } from './support/processes';
import { TcpRelay } from './support/tcp-relay';
import { TEST_ADMIN_TOKEN, testEnv } from './support/test-gateway';

/**
 * The gateway's readiness (`GET /health/ready`, docs/observability.md "Probes"), on the gateway as
 * users start it: 503 naming the reason while its database is unreachable, while a migration it
 * runs is not recorded in the database, and once shutdown has begun; `/health` stays the
 * liveness answer it was. The database is reached through a TCP relay the test closes and opens,
 * as test/audit-lag.e2e-spec.ts does.
 */

const LAG_MAX_MS = 500;

interface Readiness {
  status: string;
  reasons: string[];
}

let database: OwnDatabase;
let relay: TcpRelay;
let gateway: GatewayProcess;

beforeAll(async () => {
  database = await ownDatabase();
  const url = new URL(database.url);
  relay = await TcpRelay.listen(await freePort(), Number(url.port));
  url.port = String(relay.port);
  gateway = await launchGateway(testEnv({ DATABASE_URL: url.toString(), LOG_LEVEL: 'info', AUDIT_LAG_MAX_MS: String(LAG_MAX_MS) }));
  await gatewayReady(gateway);
});

afterAll(async () => {
  if (gateway) await killGateway(gateway);
  await relay?.close();
  await database?.dispose();
});

async function readiness(): Promise<{ status: number; body: Readiness }> {
  return call<Readiness>(gateway.url, 'GET', '/health/ready', { timeoutMs: 10_000 });
}

it('is ready while the database answers, every migration is applied and the audit trail keeps up', async () => {
  expect(await readiness()).toMatchObject({ status: 200, body: { status: 'ready', reasons: [] } });
});

it('answers 503 naming the migrations the database has not recorded, while /health stays 200', async () => {
  const admin = new Client({ connectionString: database.url });
  await admin.connect();
  try {
    const removed = await admin.query<{ id: number; timestamp: string; name: string }>("DELETE FROM migrations WHERE name LIKE 'McpToolPins%' RETURNING id, timestamp, name");
    expect(removed.rows).toHaveLength(1);
    const name = removed.rows[0].name;
    try {
      expect(await readiness()).toMatchObject({ status: 503, body: { status: 'not_ready', reasons: [`migrations pending: ${name}`] } });
      expect((await call(gateway.url, 'GET', '/health')).status).toBe(200);
    } finally {
      await admin.query('INSERT INTO migrations (id, timestamp, name) VALUES ($1, $2, $3)', [removed.rows[0].id, removed.rows[0].timestamp, name]);
    }
    expect(await readiness()).toMatchObject({ status: 200, body: { status: 'ready' } });
  } finally {
    await admin.end();
  }
});

it('answers 503 while the database is unreachable, and is ready again once it is back', async () => {
  await relay.close();
  try {
    expect(await readiness()).toMatchObject({ status: 503, body: { status: 'not_ready', reasons: ['database unreachable'] } });
  } finally {
    await relay.open();
  }
  await eventually(async () => (await readiness()).status === 200, 15_000, 'ready again');
});

it('answers 503 while the audit trail is behind by more than AUDIT_LAG_MAX_MS, and is ready once it has caught up', async () => {
  const agent = await call<{ id: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: TEST_ADMIN_TOKEN, body: { name: 'lagging-agent' } });
  const key = await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: TEST_ADMIN_TOKEN, body: { name: 'readiness' } });
  const admin = new Client({ connectionString: database.url });
  await admin.connect();
  try {
    // The database answers, but refuses the audit trail's writes, as a full disk would.
    await admin.query(`CREATE FUNCTION refuse_audit_write() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = '53100'; END $$`);
    await admin.query('CREATE TRIGGER refuse_audit_write BEFORE INSERT OR UPDATE ON audit_chain_heads FOR EACH ROW EXECUTE FUNCTION refuse_audit_write()');
    const check = await call(gateway.url, 'POST', '/v1/check', { body: { agentId: agent.body.id, plugin: 'FilePlugin', function: 'ReadFile' }, headers: { 'x-api-key': key.body.key } });
    expect(check.status).toBe(200);
    let behind: Readiness | null = null;
    await eventually(async () => {
      const answer = await readiness();
      if (answer.status === 503) behind = answer.body;
      return behind !== null;
    }, 10_000, 'readiness 503 for the audit lag');
    expect(behind).toEqual({ status: 'not_ready', reasons: [expect.stringMatching(/^audit trail behind: \d+ entries not yet written, the oldest for \d+ ms \(AUDIT_LAG_MAX_MS 500\)$/)], timestamp: expect.any(String) });
  } finally {
    await admin.query('DROP TRIGGER IF EXISTS refuse_audit_write ON audit_chain_heads');
    await admin.query('DROP FUNCTION IF EXISTS refuse_audit_write()');
    await admin.end();
  }
  await eventually(async () => (await readiness()).status === 200, 15_000, 'ready once the trail caught up');
});

it('answers 503 `shutting down` to a request that arrives once SIGTERM has begun the shutdown', async () => {
  const probe = await HalfSentRequest.begin(gateway.url, '/health/ready');
  try {
    gateway.child.kill('SIGTERM');
    await eventually(async () => gateway.output().stdout.includes('shutting down'), 10_000, 'the shutdown begun');
    const answer = await probe.finish();
    expect(answer.status).toBe(503);
    expect(answer.body).toMatchObject({ status: 'not_ready', reasons: ['shutting down'] });
    expect(answer.headers).toMatch(/\r\nConnection: close/i);
  } finally {
    probe.destroy();
  }
  expect(await within(gateway.exit, 30_000)).toMatchObject({ code: 0 });
});
