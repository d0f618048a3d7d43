import { DataSource, MigrationExecutor } from 'typeorm';

/** Any fixed 64-bit key; every instance of the service uses the same one. */
const MIGRATION_LOCK_KEY = 7_210_331_642;

/**
 * Runs pending migrations while holding a PostgreSQL advisory lock, so instances starting
 * together migrate once. The lock and the migrations share one connection: on the embedded
 * database (a pool of one) a second connection would wait forever.
 */
export async function runMigrations(dataSource: DataSource): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      const executor = new MigrationExecutor(dataSource, runner);
      executor.transaction = 'each';
      const applied = await executor.executePendingMigrations();
      return applied.map((migration) => migration.name);
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await runner.release();
  }
}
