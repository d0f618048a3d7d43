import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { PgliteTestDatabase } from './pglite-test-database';
import { testDatabaseKind, testDatabaseUrl } from './test-gateway';

/** A database one test file has to itself. */
export interface OwnDatabase {
  url: string;
  /** Makes the database unreachable (for /health's 503). */
  takeDown(): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * A database of its own, for tests that change shared state (the bootstrap organization, whole
 * partitions) or take the database down: a throwaway database on the run's PostgreSQL server, or
 * a fresh in-memory PGlite on the embedded run.
 */
export async function ownDatabase(): Promise<OwnDatabase> {
  if (testDatabaseKind() === 'pglite') {
    const embedded = await PgliteTestDatabase.start();
    let stopped = false;
    const stop = async () => {
      if (!stopped) await embedded.stop();
      stopped = true;
    };
    return { url: embedded.url, takeDown: stop, dispose: stop };
  }
  const name = `agentgov_e2e_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: testDatabaseUrl() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    takeDown: async () => {
      await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
    },
    dispose: async () => {
      await dropDatabase(admin, name);
      await admin.end();
    },
  };
}

/** Longest wait for an autovacuum worker to leave a database being dropped. */
const DROP_PATIENCE_MS = 10_000;

/**
 * DROP DATABASE … WITH (FORCE), again while it fails for want of privilege: FORCE ends the
 * connections of the test's own role, but an autovacuum worker (a superuser's process) working
 * on the database at that moment cannot be ended by a role that is not a superuser; it leaves soon.
 */
export async function dropDatabase(admin: Client, name: string): Promise<void> {
  const deadline = Date.now() + DROP_PATIENCE_MS;
  for (;;) {
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '42501' || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
