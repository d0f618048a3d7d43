import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { freePort, GATEWAY_MAIN, launch, ServiceProcess, waitFor } from './support/processes';
import { startUpstream, TestUpstream } from './support/upstream';
import { testDatabaseKind } from './support/test-gateway';

/**
 * The first start of two gateways sharing one database and one SIGNING_KEY_FILE (docs/production.md:
 * "Instances may share one SIGNING_KEY_FILE"), both at once, as an orchestrator starts replicas:
 * the key is created once, both start and sign with it, and a token of either works at the
 * other. Before, both could find the file missing and generate one (the second write failed on
 * the file the first had made, or read it half-written), and both could insert the key's row
 * (a duplicate key stopped the start). Built gateways as processes, on a database of their own.
 * On PostgreSQL, one case holds the key table locked until both are waiting to register the key,
 * so that both register it at the same moment whatever the machine's speed.
 */

const ADMIN_TOKEN = 'signing-key-race-admin-token-0123456789';
const ROUNDS = 2;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-key-race-'));
let upstream: TestUpstream;
const started: ServiceProcess[] = [];
const databases: OwnDatabase[] = [];

beforeAll(async () => {
  upstream = await startUpstream();
});

afterAll(async () => {
  await Promise.all(started.map((gateway) => gateway.kill()));
  await Promise.all(databases.map((database) => database.dispose()));
  await upstream?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

function gatewayEnv(database: OwnDatabase, round: string, keyFile: string, name: string): Record<string, string> {
  return {
    DATABASE_URL: database.url,
    DATABASE_POOL_MAX: '2',
    PDP_GRPC_PORT: '0',
    ADMIN_TOKEN,
    PUBLIC_URL: 'http://gateway.test',
    SIGNING_KEY_FILE: keyFile,
    DATA_DIR: path.join(scratch, round, name),
    POLICIES_FILE: '/dev/null',
    UPSTREAM_URL: upstream.url,
    LOG_LEVEL: 'warn',
  };
}

async function launchPair(database: OwnDatabase, round: string): Promise<{ pair: [ServiceProcess, ServiceProcess]; keyFile: string }> {
  const keyFile = path.join(scratch, round, 'keys', 'signing-key.pem');
  const [portA, portB] = [await freePort(), await freePort()];
  const pair: [ServiceProcess, ServiceProcess] = [launch(GATEWAY_MAIN, portA, gatewayEnv(database, round, keyFile, 'a')), launch(GATEWAY_MAIN, portB, gatewayEnv(database, round, keyFile, 'b'))];
  started.push(...pair);
  return { pair, keyFile };
}

async function ready(pair: ServiceProcess[]): Promise<void> {
  await Promise.all(pair.map((gateway) => waitFor(gateway, '/health', (status) => status === 200)));
}

async function freshDatabase(): Promise<OwnDatabase> {
  const database = await ownDatabase();
  databases.push(database);
  return database;
}

/**
 * An earlier start with a key of its own migrates the database and stops: on PGlite every
 * connection is one session, in which the migrations' advisory lock is reentrant, so two
 * gateways starting on an unmigrated PGlite would both migrate (test/support/global-setup.ts).
 */
async function migratedByAnEarlierStart(database: OwnDatabase, round: string): Promise<void> {
  const earlier = launch(GATEWAY_MAIN, await freePort(), gatewayEnv(database, round, path.join(scratch, round, 'earlier-key.pem'), 'earlier'));
  started.push(earlier);
  await ready([earlier]);
  await earlier.stop();
}

it.each(Array.from({ length: ROUNDS }, (_value, index) => index + 1))('starts both on a fresh database, signing with one key, when both create it at once (round %i)', async (round) => {
  const database = await freshDatabase();
  const embedded = testDatabaseKind() === 'pglite';
  if (embedded) await migratedByAnEarlierStart(database, `round-${round}`);
  const { pair, keyFile } = await launchPair(database, `round-${round}`);
  await ready(pair);
  await expectOneSigningKey(pair, keyFile, embedded ? 2 : 1);
});

if (testDatabaseKind() === 'postgres') {
  it('starts both when they register the key at the same moment (the key table held locked until both wait on it)', async () => {
    const database = await freshDatabase();
    // The key table must exist to be locked; the two then start at once with a shared key file not made yet.
    await migratedByAnEarlierStart(database, 'locked');
    // pg_stat_activity is read once per transaction: the locking session cannot watch for the waiters.
    const [lock, watch] = [new Client({ connectionString: database.url }), new Client({ connectionString: database.url })];
    await Promise.all([lock.connect(), watch.connect()]);
    try {
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE signing_keys IN ACCESS EXCLUSIVE MODE');
      const { pair, keyFile } = await launchPair(database, 'locked');
      const deadline = Date.now() + 45_000;
      for (;;) {
        const waiting = await watch.query<{ count: string }>("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%signing_keys%'");
        if (Number(waiting.rows[0].count) >= 2) break;
        for (const gateway of pair) expect(gateway.child.exitCode).toBeNull();
        if (Date.now() > deadline) throw new Error(`the two gateways did not both wait on the key table: ${pair.map((gateway) => gateway.output().stdout.slice(-500)).join('\n')}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await lock.query('COMMIT');
      await ready(pair);
      await expectOneSigningKey(pair, keyFile, 2);
    } finally {
      await Promise.all([lock.end(), watch.end()]);
    }
  }, 150_000);
}

/** Both sign with the key in `keyFile` and publish the same keys (`published` of them); a token of each works at the other. */
async function expectOneSigningKey([a, b]: ServiceProcess[], keyFile: string, published: number): Promise<void> {
  expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
  expect(fs.readdirSync(path.dirname(keyFile))).toEqual(['signing-key.pem']);

  const jwksA = await call<{ keys: Array<{ kid: string }> }>(a.url, 'GET', '/.well-known/jwks.json');
  const jwksB = await call<{ keys: Array<{ kid: string }> }>(b.url, 'GET', '/.well-known/jwks.json');
  expect(jwksA.status).toBe(200);
  expect(jwksA.body.keys).toHaveLength(published);
  expect(jwksB.body).toEqual(jwksA.body);
  const kids = new Set<string>();

  for (const [issuer, verifier] of [
    [a, b],
    [b, a],
  ]) {
    const agent = await call<{ token: string }>(issuer.url, 'POST', '/admin/agents', { adminToken: ADMIN_TOKEN, body: { name: 'race agent' } });
    expect(agent.status).toBe(201);
    const header = JSON.parse(Buffer.from(agent.body.token.split('.')[0], 'base64url').toString()) as { kid: string };
    expect(jwksA.body.keys.map((key) => key.kid)).toContain(header.kid);
    kids.add(header.kid);
    const proxied = await call(verifier.url, 'GET', '/proxy/orders', { bearer: agent.body.token });
    expect(proxied.status).toBe(200);
  }
  expect(kids.size).toBe(1);
  for (const gateway of [a, b]) expect(gateway.output().stdout + gateway.output().stderr).not.toMatch(/"level":"(error|fatal)"/);
}
