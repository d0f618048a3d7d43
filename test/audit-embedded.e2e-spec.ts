import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DataSource } from 'typeorm';
import { call } from './support/http-client';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * The embedded database's own audit path: PGlite is one session, so the writer runs in the
 * gateway's thread over the gateway's single connection (PostgreSQL uses a worker thread).
 * These gateways run exactly as `npm start` does without DATABASE_URL.
 */
describe('audit trail on the embedded database', () => {
  let dataDir: string;
  let upstream: TestUpstream;
  let gateway: TestGateway;
  let org: TestOrganization;
  let token: string;

  const embeddedEnv = () => ({ DATABASE_URL: '', DATA_DIR: dataDir, UPSTREAM_URL: upstream.url });

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-audit-embedded-'));
    upstream = await startUpstream();
    gateway = await startGateway(embeddedEnv());
    org = await createOrganization(gateway);
    const policy = { name: 'no-secrets', match: { action: 'read:*' }, rules: [{ condition: 'args.path starts_with "/secret"', action: 'deny', reason: 'No secrets' }] };
    expect((await call(gateway.url, 'PUT', '/admin/policies/no-secrets', { adminToken: org.adminToken, body: policy })).status).toBe(201);
    const agent = await call<{ token: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'embedded-bot', trustTier: 'verified' } });
    token = agent.body.token;
  });

  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('records every decision, keeps the chain verifiable, and detects an edited row', async () => {
    for (const proxied of ['/proxy/orders/1', '/proxy/orders/2', '/proxy/secret/x']) {
      await call(gateway.url, 'GET', proxied, { bearer: token });
    }
    const entries = await decisionEntries(gateway, org, 3);
    expect(entries.map((entry) => [entry.path, entry.decision]).sort()).toEqual([
      ['/orders/1', 'allow'],
      ['/orders/2', 'allow'],
      ['/secret/x', 'deny'],
    ]);

    const verified = await call<{ ok: boolean; checked: number }>(gateway.url, 'GET', '/admin/audit/verify', { adminToken: org.adminToken });
    expect(verified.body).toMatchObject({ ok: true });
    expect(verified.body.checked).toBeGreaterThanOrEqual(3);

    await gateway.app.get(DataSource).query(`UPDATE audit_entries SET reason = 'edited' WHERE org_id = $1 AND path = '/secret/x'`, [org.id]);
    const broken = await call<{ ok: boolean; brokenAt: { problem: string } }>(gateway.url, 'GET', '/admin/audit/verify', { adminToken: org.adminToken });
    expect(broken.body.ok).toBe(false);
    expect(broken.body.brokenAt.problem).toBe('hash_mismatch');
  });

  it('drains queued entries on shutdown, so a restart on the same data finds them all', async () => {
    const before = (await decisionEntries(gateway, org, 3)).length;
    for (let i = 0; i < 20; i++) await call(gateway.url, 'GET', `/proxy/items/${i}`, { bearer: token });
    await gateway.close();
    gateway = await startGateway(embeddedEnv());
    const after = await decisionEntries(gateway, org, before + 20);
    expect(after).toHaveLength(before + 20);
  });
});

interface Entry {
  path: string;
  decision: string;
}

/** Polls GET /admin/audit until at least `count` decision entries are there. */
async function decisionEntries(gateway: TestGateway, org: TestOrganization, count: number): Promise<Entry[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const page = await call<{ entries: Array<Entry & { source: string }> }>(gateway.url, 'GET', '/admin/audit?source=proxy&limit=1000', { adminToken: org.adminToken });
    if (page.body.entries.length >= count || Date.now() > deadline) return page.body.entries;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
