import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { SignedBundle } from '../src/core/edge-protocol/bundle-format';
import { MIGRATIONS } from '../src/gateway/database/migration-list';
import { CallerCredentials1765238400500 } from '../migrations/1765238400500-caller-credentials';
import { call } from './support/http-client';
import { OwnDatabase, ownDatabase } from './support/own-database';
import { startGateway, TEST_ADMIN_TOKEN, TestGateway } from './support/test-gateway';

/**
 * Admin tokens, API keys and sidecar tokens lived in three tables (admin_tokens, api_keys,
 * sidecar_tokens) until the CallerCredentials migration moved them into one. A database is
 * brought to the schema before it, rows are written there as the gateway of that schema wrote
 * them (SHA-256 of the secret, prefix, binding), and a gateway is started on it: it migrates, and
 * every secret handed out before keeps its rights, the revoked ones stay refused. The migration's
 * down() moves the rows back, and migrating up again loses nothing.
 */

const MOVING = MIGRATIONS.indexOf(CallerCredentials1765238400500);
const sha256 = (secret: string) => createHash('sha256').update(secret).digest('hex');
const secret = (prefix: string) => `${prefix}_${randomBytes(32).toString('base64url')}`;

const ADMIN = secret('adm');
const REVOKED_ADMIN = secret('adm');
const OLD_BOOTSTRAP = secret('adm');
const KEY = secret('agk');
const REVOKED_KEY = secret('agk');
const SIDECAR = secret('sct');
const BOUND_SIDECAR = secret('sct');

/** The organization and credentials as the previous schema held them. */
async function writeOldRows(db: DataSource): Promise<void> {
  await db.query(`INSERT INTO organizations (id, name, plan) VALUES ('org_before', 'Before the move', 'enterprise'), ('org_default', 'Default organization', 'enterprise')`);
  await db.query(
    `INSERT INTO admin_tokens (id, org_id, token_hash, kind, created_at, revoked_at) VALUES
       ('atk_before', 'org_before', $1, 'issued', '2026-11-20T09:00:00Z', NULL),
       ('atk_revoked', 'org_before', $2, 'issued', '2026-11-20T09:01:00Z', '2026-11-21T09:00:00Z'),
       ('atk_boot', 'org_default', $3, 'bootstrap', '2026-11-20T09:02:00Z', NULL)`,
    [sha256(ADMIN), sha256(REVOKED_ADMIN), sha256(OLD_BOOTSTRAP)],
  );
  await db.query(
    `INSERT INTO api_keys (id, org_id, name, key_hash, key_prefix, created_at, revoked_at) VALUES
       ('key_live', 'org_before', 'billing adapter', $1, $2, '2026-11-20T10:00:00Z', NULL),
       ('key_gone', 'org_before', 'old adapter', $3, $4, '2026-11-20T10:01:00Z', '2026-11-22T10:00:00Z')`,
    [sha256(KEY), KEY.slice(0, 8), sha256(REVOKED_KEY), REVOKED_KEY.slice(0, 8)],
  );
  await db.query(
    `INSERT INTO sidecar_tokens (id, org_id, name, token_hash, token_prefix, created_at, revoked_at, sidecar_keys, sidecar_id, bound_at) VALUES
       ('sctk_free', 'org_before', 'edge-eu-1', $1, $2, '2026-11-20T11:00:00Z', NULL, NULL, NULL, NULL),
       ('sctk_bound', 'org_before', 'edge-us-1', $3, $4, '2026-11-20T11:01:00Z', NULL, 'thumbprint-of-old-keys', 'edge-old', '2026-11-20T12:00:00Z')`,
    [sha256(SIDECAR), SIDECAR.slice(0, 8), sha256(BOUND_SIDECAR), BOUND_SIDECAR.slice(0, 8)],
  );
}

function dataSource(url: string, migrations: Array<(typeof MIGRATIONS)[number]>): Promise<DataSource> {
  return new DataSource({ type: 'postgres', url, migrations, migrationsTransactionMode: 'each', extra: { max: 1 } }).initialize();
}

async function tableExists(db: DataSource, table: string): Promise<boolean> {
  const rows: Array<{ found: string | null }> = await db.query('SELECT to_regclass($1)::text AS found', [table]);
  return rows[0].found !== null;
}

const publicJwk = (type: 'ed25519' | 'x25519') => generateKeyPairSync(type as 'ed25519').publicKey.export({ format: 'jwk' });

describe('the move of admin tokens, API keys and sidecar tokens into caller_credentials', () => {
  let database: OwnDatabase;
  let gateway: TestGateway | undefined;

  beforeAll(async () => {
    expect(MOVING).toBeGreaterThan(0);
    database = await ownDatabase();
    const old = await dataSource(database.url, MIGRATIONS.slice(0, MOVING));
    await old.runMigrations();
    await writeOldRows(old);
    await old.destroy();
    gateway = await startGateway({ DATABASE_URL: database.url });
  });

  afterAll(async () => {
    await gateway?.close();
    await database?.dispose();
  });

  const as = (token: string, method: string, route: string, body?: unknown) => call<Record<string, unknown>>(gateway!.url, method, route, { adminToken: token, body });

  it('leaves the old admin tokens with their rights: the live one opens its organization, the revoked and the replaced bootstrap token stay refused', async () => {
    const organization = await as(ADMIN, 'GET', '/admin/organization');
    expect(organization.status).toBe(200);
    expect(organization.body.id).toBe('org_before');
    expect((await as(REVOKED_ADMIN, 'GET', '/admin/organization')).status).toBe(401);
    // The old row was org_default's bootstrap token: ADMIN_TOKEN replaced it at the start.
    expect((await as(OLD_BOOTSTRAP, 'GET', '/admin/organization')).status).toBe(401);
    expect((await as(TEST_ADMIN_TOKEN, 'GET', '/admin/organization')).body.id).toBe('org_default');
  });

  it('lists the old API keys and sidecar tokens as before, and the live key still authenticates an adapter', async () => {
    expect((await as(ADMIN, 'GET', '/admin/api-keys')).body).toEqual({
      apiKeys: [
        { id: 'key_live', name: 'billing adapter', prefix: KEY.slice(0, 8), createdAt: '2026-11-20T10:00:00.000Z', revokedAt: null },
        { id: 'key_gone', name: 'old adapter', prefix: REVOKED_KEY.slice(0, 8), createdAt: '2026-11-20T10:01:00.000Z', revokedAt: '2026-11-22T10:00:00.000Z' },
      ],
    });
    expect((await as(ADMIN, 'GET', '/admin/sidecar-tokens')).body).toEqual({
      sidecarTokens: [
        { id: 'sctk_free', name: 'edge-eu-1', prefix: SIDECAR.slice(0, 8), createdAt: '2026-11-20T11:00:00.000Z', revokedAt: null },
        { id: 'sctk_bound', name: 'edge-us-1', prefix: BOUND_SIDECAR.slice(0, 8), createdAt: '2026-11-20T11:01:00.000Z', revokedAt: null },
      ],
    });
    const agent = await as(ADMIN, 'POST', '/admin/agents', { name: 'after-the-move' });
    const check = (key: string) =>
      call(gateway!.url, 'POST', '/v1/check', { headers: { 'x-api-key': key }, body: { agentId: agent.body.id, plugin: 'FilePlugin', function: 'ReadFile', arguments: { path: '/tmp/x' } } });
    expect((await check(KEY)).status).toBe(200);
    expect((await check(REVOKED_KEY)).status).toBe(401);
  });

  it('lets the old sidecar token fetch the bundle (carrying the old key’s hash) but not administer, and keeps the bound token bound', async () => {
    const bundle = await call<SignedBundle>(gateway!.url, 'GET', '/api/v1/bundle', { adminToken: SIDECAR });
    expect(bundle.status).toBe(200);
    expect(bundle.body.orgId).toBe('org_before');
    expect(bundle.body.apiKeys).toEqual([{ id: 'key_live', hash: sha256(KEY) }]);
    expect((await as(SIDECAR, 'GET', '/admin/organization')).status).toBe(401);
    const grant = await as(BOUND_SIDECAR, 'POST', '/api/v1/sidecar/grant', { sidecarId: 'edge-new', signingKey: publicJwk('ed25519'), sealingKey: publicJwk('x25519') });
    expect(grant.status).toBe(409);
    expect(grant.body.message).toContain('bound to the keys of sidecar edge-old');
  });

  it('moves the rows back on down(), hashes and all, and up again loses nothing', async () => {
    const issued = await as(ADMIN, 'POST', '/admin/api-keys', { name: 'issued after the move' });
    expect(issued.status).toBe(201);
    await gateway!.close();
    gateway = undefined;

    const db = await dataSource(database.url, MIGRATIONS);
    for (let undo = MIGRATIONS.length - 1; undo >= MOVING; undo--) await db.undoLastMigration();
    expect(await tableExists(db, 'caller_credentials')).toBe(false);
    expect(await db.query(`SELECT id, key_hash, key_prefix, revoked_at IS NOT NULL AS revoked FROM api_keys ORDER BY created_at`)).toEqual([
      { id: 'key_live', key_hash: sha256(KEY), key_prefix: KEY.slice(0, 8), revoked: false },
      { id: 'key_gone', key_hash: sha256(REVOKED_KEY), key_prefix: REVOKED_KEY.slice(0, 8), revoked: true },
      { id: issued.body.id, key_hash: sha256(String(issued.body.key)), key_prefix: String(issued.body.key).slice(0, 8), revoked: false },
    ]);
    expect(await db.query(`SELECT id, token_hash, sidecar_keys, sidecar_id FROM sidecar_tokens ORDER BY created_at`)).toEqual([
      { id: 'sctk_free', token_hash: sha256(SIDECAR), sidecar_keys: null, sidecar_id: null },
      { id: 'sctk_bound', token_hash: sha256(BOUND_SIDECAR), sidecar_keys: 'thumbprint-of-old-keys', sidecar_id: 'edge-old' },
    ]);
    const adminTokens: Array<{ id: string; org_id: string; token_hash: string; kind: string; revoked: boolean }> = await db.query(
      `SELECT id, org_id, token_hash, kind, revoked_at IS NOT NULL AS revoked FROM admin_tokens ORDER BY created_at`,
    );
    expect(adminTokens.slice(0, 3)).toEqual([
      { id: 'atk_before', org_id: 'org_before', token_hash: sha256(ADMIN), kind: 'issued', revoked: false },
      { id: 'atk_revoked', org_id: 'org_before', token_hash: sha256(REVOKED_ADMIN), kind: 'issued', revoked: true },
      { id: 'atk_boot', org_id: 'org_default', token_hash: sha256(OLD_BOOTSTRAP), kind: 'bootstrap', revoked: true },
    ]);
    expect(adminTokens.slice(3)).toEqual([expect.objectContaining({ org_id: 'org_default', token_hash: sha256(TEST_ADMIN_TOKEN), kind: 'bootstrap', revoked: false })]);
    await db.destroy();

    gateway = await startGateway({ DATABASE_URL: database.url });
    expect((await as(ADMIN, 'GET', '/admin/organization')).body.id).toBe('org_before');
    expect((await call(gateway.url, 'GET', '/api/v1/bundle', { adminToken: SIDECAR })).status).toBe(200);
    expect((await as(ADMIN, 'GET', '/admin/api-keys')).body.apiKeys).toHaveLength(3);
  });
});
