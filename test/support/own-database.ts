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
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}
