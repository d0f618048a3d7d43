import { DataSource } from 'typeorm';
import { AuditRetention } from '../src/gateway/audit/audit-retention';
import type { PlanId } from '../src/core/config/plans';
import { call } from './support/http-client';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';
import { ownDatabase } from './support/own-database';

/**
 * Retention by plan (`auditRetentionDays`: free 7, starter 30, enterprise unlimited), enforced by
 * dropping whole day partitions where it can. Runs on a database of its own: every other file
 * writes into today's partition of the shared one.
 */

// jest-circus reads testTimeout only from the top-level config, not from the e2e project's entry.

const DAY_MS = 86_400_000;

interface Party {
  org: TestOrganization;
  token: string;
}

let database: { url: string; dispose(): Promise<void> };
let upstream: TestUpstream;
let gateway: TestGateway;


beforeAll(async () => {
  database = await ownDatabase();
  upstream = await startUpstream();
  gateway = await startGateway({ DATABASE_URL: database.url, DATABASE_POOL_MAX: '1', UPSTREAM_URL: upstream.url });
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
  await database?.dispose();
});

function sql<T = Record<string, unknown>>(query: string, params: unknown[] = []): Promise<T[]> {
  return gateway.app.get(DataSource).query(query, params);
}

function enforce(nowMs: number) {
  return gateway.app.get(AuditRetention).enforce(nowMs);
}

/** The partition holding today's entries, e.g. audit_entries_20261121. */
function todaysPartition(): string {
  return `audit_entries_${new Date().toISOString().slice(0, 10).replace(/-/g, '')}`;
}

async function partitionExists(name: string): Promise<boolean> {
  return (await sql('SELECT 1 FROM pg_class WHERE relname = $1', [name])).length === 1;
}

async function party(plan: PlanId): Promise<Party> {
  const org = await createOrganization(gateway, plan, `Retention ${plan} org`);
  const created = await call<{ token: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: `${plan}-agent` } });
  expect(created.status).toBe(201);
  return { org, token: created.body.token };
}

async function traffic({ token }: Party, requests: number): Promise<void> {
  for (let i = 0; i < requests; i++) {
    expect((await call(gateway.url, 'GET', `/proxy/retained/${i}`, { bearer: token })).status).toBe(200);
  }
}

async function entryCount({ org }: Party): Promise<number> {
  const response = await call<{ entries: unknown[] }>(gateway.url, 'GET', '/admin/audit?limit=1000', { adminToken: org.adminToken });
  expect(response.status).toBe(200);
  return response.body.entries.length;
}

/** Waits until the organization has `count` entries written (agent creation included). */
async function written(party: Party, count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await entryCount(party)) < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
  expect(await entryCount(party)).toBe(count);
}

async function verify({ org }: Party) {
  const response = await call<{ ok: boolean; checked: number; brokenAt: unknown }>(gateway.url, 'GET', '/admin/audit/verify', { adminToken: org.adminToken });
  expect(response.status).toBe(200);
  return response.body;
}

describe('audit retention', () => {
  let lone: Party;

  // Each step checks what is stored first, then the report enforce() returns.
  it('drops a day partition whose entries all passed their retention, and changes nothing before', async () => {
    lone = await party('free');
    await traffic(lone, 3);
    await written(lone, 4);
    const partition = todaysPartition();
    expect(await sql(`SELECT DISTINCT org_id FROM ${partition}`)).toEqual([{ org_id: lone.org.id }]);

    for (const nowMs of [Date.now(), Date.now() + 6 * DAY_MS]) {
      const report = await enforce(nowMs);
      expect(await entryCount(lone)).toBe(4);
      expect(await partitionExists(partition)).toBe(true);
      expect(report).toEqual({ droppedPartitions: [], deletedEntries: 0 });
    }

    const report = await enforce(Date.now() + 10 * DAY_MS);
    expect(await partitionExists(partition)).toBe(false);
    expect(await entryCount(lone)).toBe(0);
    expect(report).toEqual({ droppedPartitions: [partition], deletedEntries: 0 });
  });

  it('keeps a day shared with longer retention, deleting only the expired organization’s rows', async () => {
    const free = await party('free');
    const starter = await party('starter');
    const enterprise = await party('enterprise');
    await traffic(free, 2);
    await traffic(starter, 2);
    await traffic(enterprise, 3);
    await written(free, 3);
    await written(starter, 3);
    await written(enterprise, 4);
    const partition = todaysPartition();
    const counts = async () => [await entryCount(free), await entryCount(starter), await entryCount(enterprise)];

    const unchanged = await enforce(Date.now());
    expect(await counts()).toEqual([3, 3, 4]);
    expect(unchanged).toEqual({ droppedPartitions: [], deletedEntries: 0 });

    const tenDays = await enforce(Date.now() + 10 * DAY_MS);
    expect(await partitionExists(partition)).toBe(true);
    expect(await counts()).toEqual([0, 3, 4]);
    expect(tenDays).toEqual({ droppedPartitions: [], deletedEntries: 3 });

    // Past the starter plan's 30 days, only the enterprise organization's rows are left.
    const fortyDays = await enforce(Date.now() + 40 * DAY_MS);
    expect(await partitionExists(partition)).toBe(true);
    expect(await counts()).toEqual([0, 0, 4]);
    expect(await verify(enterprise)).toMatchObject({ ok: true, checked: 4 });
    expect(fortyDays).toEqual({ droppedPartitions: [], deletedEntries: 3 });
  });

  it('expires only the entries older than the retention cut-off within a day', async () => {
    const free = await party('free');
    await traffic(free, 2);
    await written(free, 3);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const cutoff = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await traffic(free, 3);
    await written(free, 6);

    const report = await enforce(cutoff + 7 * DAY_MS);
    expect(await entryCount(free)).toBe(3);
    // What retention removed is not tampering: the rest of the chain still verifies.
    expect(await verify(free)).toMatchObject({ ok: true, checked: 3, brokenAt: null });
    expect(report).toEqual({ droppedPartitions: [], deletedEntries: 3 });
  });

  it('keeps verifying the entries before one a sidecar sent late with an expired time', async () => {
    const free = await party('free');
    await traffic(free, 3);
    await written(free, 4);
    // A sidecar offline for 8 days forwards what it buffered: seq 5, its time past the 7 days.
    const late = await call(gateway.url, 'POST', '/api/v1/audit/ingest', {
      adminToken: free.org.adminToken,
      headers: { 'x-sidecar-id': 'sc-late' },
      body: { sidecarId: 'sc-late', entries: [{ seq: 1, id: 'aud_0123456789abcdef01234567', ts: Date.now() - 8 * DAY_MS, action: 'read:x', decision: 'allow', enforced: true, rateLimited: false }] },
    });
    expect(late.status).toBe(200);
    await traffic(free, 2);
    await written(free, 7);
    await sql(`UPDATE audit_entries SET reason = 'nothing to see' WHERE org_id = $1 AND seq = 2`, [free.org.id]);

    await enforce(Date.now());
    expect(await verify(free)).toMatchObject({ ok: false, brokenAt: { seq: 2, problem: 'hash_mismatch' } });
    // Once the entries before it expire, it goes with them.
    await enforce(Date.now() + 10 * DAY_MS);
    expect(await entryCount(free)).toBe(0);
  });

  it('does not report tampering for an organization whose entries retention removed entirely', async () => {
    expect(await verify(lone)).toMatchObject({ ok: true, checked: 0, brokenAt: null });
  });
});
