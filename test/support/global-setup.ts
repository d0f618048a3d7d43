import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../src/gateway/database/migration-list';
import { runMigrations } from '../../src/gateway/database/migrator';
import { PgliteTestDatabase } from './pglite-test-database';

/**
 * One database for the whole e2e run: DATABASE_URL when set (PostgreSQL), else one in-memory
 * PGlite shared by every test file (it takes ~3 s to start), served by PgliteTestDatabase.
 * Test files isolate themselves by creating their own organizations. Also one signing key, so every gateway instance of the run
 * verifies every other's tokens, as instances sharing a key would in production.
 */
export default async function globalSetup(): Promise<void> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-e2e-'));
  process.env.TEST_SCRATCH_DIR = scratch;
  process.env.TEST_SIGNING_KEY_FILE = path.join(scratch, 'signing-key.pem');
  if (process.env.DATABASE_URL) {
    process.env.TEST_DATABASE_URL = process.env.DATABASE_URL;
    process.env.TEST_DB_KIND = 'postgres';
    return;
  }
  const embedded = await PgliteTestDatabase.start();
  (globalThis as { __pgliteTestDatabase?: PgliteTestDatabase }).__pgliteTestDatabase = embedded;
  await migrate(embedded.url);
  process.env.TEST_DATABASE_URL = embedded.url;
  process.env.TEST_DB_KIND = 'pglite';
}

/**
 * Migrates the shared PGlite before any suite starts a gateway on it. The gateway's advisory lock
 * (src/gateway/database/migrator.ts) cannot keep two gateways of the run apart there: every
 * connection to the test server is the same PGlite session, in which the lock is reentrant, so
 * the first two suites' gateways both ran the pending migrations ("relation already exists").
 * On PostgreSQL the lock holds, and the gateways migrate as in production.
 */
async function migrate(url: string): Promise<void> {
  const dataSource = await new DataSource({ type: 'postgres', url, migrations: MIGRATIONS, migrationsTransactionMode: 'each', extra: { max: 1 } }).initialize();
  try {
    await runMigrations(dataSource);
  } finally {
    await dataSource.destroy();
  }
}
