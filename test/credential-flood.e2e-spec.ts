import { randomBytes } from 'node:crypto';
import { call } from './support/http-client';
import { OwnDatabase, ownDatabase } from './support/own-database';
import { PgStatementCounter } from './support/pg-statement-counter';
import { createOrganization, startGateway, testDatabaseUrl, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * A flood of bad admin tokens and API keys does not cost a database query per request: a
 * credential the database did not know is refused from memory for 30 s. Queries are counted on
 * the wire (PgStatementCounter) between the gateway and its database, so the count is the same
 * on PostgreSQL and on the embedded test database. A credential issued afterwards, on this
 * instance or another, works at once.
 */

const FLOOD_REQUESTS = 1000;
const DISTINCT_BAD_CREDENTIALS = 20;
const CONCURRENCY = 50;

/** Sends `total` requests, `CONCURRENCY` at a time; `send(i)` makes the i-th. Returns every status seen. */
async function flood(total: number, send: (i: number) => Promise<number>): Promise<Set<number>> {
  const statuses = new Set<number>();
  let next = 0;
  const worker = async () => {
    while (next < total) statuses.add(await send(next++));
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return statuses;
}

const badCredentials = (prefix: string) => Array.from({ length: DISTINCT_BAD_CREDENTIALS }, () => `${prefix}_${randomBytes(32).toString('base64url')}`);

describe('a flood of bad credentials', () => {
  let counter: PgStatementCounter;
  let gateway: TestGateway;
  let org: TestOrganization;

  beforeAll(async () => {
    counter = await PgStatementCounter.start(testDatabaseUrl());
    gateway = await startGateway({ DATABASE_URL: counter.url });
    org = await createOrganization(gateway);
  });

  afterAll(async () => {
    await gateway?.close();
    await counter?.close();
  });

  it(`of admin tokens (${FLOOD_REQUESTS} requests, ${DISTINCT_BAD_CREDENTIALS} tokens) is refused with 401 at a query per token, not per request`, async () => {
    const tokens = badCredentials('adm');
    const before = counter.statements;
    const statuses = await flood(FLOOD_REQUESTS, async (i) => (await call(gateway.url, 'GET', '/admin/organization', { adminToken: tokens[i % tokens.length] })).status);
    const statements = counter.statements - before;
    expect(statuses).toEqual(new Set([401]));
    expect(statements).toBeLessThan(FLOOD_REQUESTS / 10);
  });

  it(`of API keys (${FLOOD_REQUESTS} requests, ${DISTINCT_BAD_CREDENTIALS} keys) is refused with 401 at a query per key, not per request`, async () => {
    const keys = badCredentials('agk');
    const before = counter.statements;
    const statuses = await flood(FLOOD_REQUESTS, async (i) => (await call(gateway.url, 'POST', '/v1/check', { headers: { 'x-api-key': keys[i % keys.length] }, body: {} })).status);
    const statements = counter.statements - before;
    expect(statuses).toEqual(new Set([401]));
    expect(statements).toBeLessThan(FLOOD_REQUESTS / 10);
  });

  it('leaves valid credentials working: the admin token, and an API key created right after the flood', async () => {
    expect((await call(gateway.url, 'GET', '/admin/organization', { adminToken: org.adminToken })).status).toBe(200);
    const agent = await call<{ id: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'after-flood' } });
    const key = await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'after-flood' } });
    expect(key.status).toBe(201);
    const check = await call(gateway.url, 'POST', '/v1/check', {
      headers: { 'x-api-key': key.body.key },
      body: { agentId: agent.body.id, plugin: 'FilePlugin', function: 'ReadFile', arguments: { path: '/tmp/x' } },
    });
    expect(check.status).toBe(200);
  });
});

/**
 * ADMIN_TOKEN is chosen by people, so it can be tried (and refused) before an instance adopts it.
 * Another instance sharing the database must accept it as soon as it is adopted, not 30 s later.
 */
describe('an ADMIN_TOKEN refused by one instance and then adopted by another', () => {
  let database: OwnDatabase;
  const started: TestGateway[] = [];
  const redis = { REDIS_URL: 'redis://127.0.0.1:6379' };

  beforeAll(async () => {
    database = await ownDatabase();
  });

  afterAll(async () => {
    for (const gateway of started) await gateway.close();
    await database?.dispose();
  });

  const instance = async (adminToken: string) => {
    const gateway = await startGateway({ ...redis, DATABASE_URL: database.url, ADMIN_TOKEN: adminToken });
    started.push(gateway);
    return gateway;
  };

  it('is accepted by the first instance at once, and the token it replaced is refused', async () => {
    const first = `first-admin-token-${randomBytes(8).toString('hex')}`;
    const chosen = `chosen-admin-token-${randomBytes(8).toString('hex')}`;
    const a = await instance(first);
    expect((await call(a.url, 'GET', '/admin/organization', { adminToken: chosen })).status).toBe(401);
    expect((await call(a.url, 'GET', '/admin/organization', { adminToken: chosen })).status).toBe(401);

    await instance(chosen);
    // The adoption reaches the first instance through Redis, in milliseconds; a refusal lasts 30 s.
    const adopted = await firstAnswer(() => call(a.url, 'GET', '/admin/organization', { adminToken: chosen }), (response) => response.status !== 401, 3000);
    expect(adopted.status).toBe(200);
    expect(adopted.body).toMatchObject({ id: 'org_default' });
    expect((await call(a.url, 'GET', '/admin/organization', { adminToken: first })).status).toBe(401);
  });
});

/** The first answer `accept`s, or the last one when `withinMs` has passed. */
async function firstAnswer<T>(ask: () => Promise<T>, accept: (answer: T) => boolean, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const answer = await ask();
    if (accept(answer) || Date.now() > deadline) return answer;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
