/**
 * The audit trail's daily partitions, as plain functions with no Nest or TypeORM: the audit
 * worker thread creates partitions too, and should not load the application's module graph.
 */
import type { SqlClient } from './sql-client';

const DAY_MS = 24 * 60 * 60 * 1000;
const PARTITION_NAME = /^audit_entries_(\d{4})(\d{2})(\d{2})$/;

/** Creates the partition of the day starting at `day` unless it exists (outside any transaction). */
export async function createDayPartition(client: Pick<SqlClient, 'query'>, day: number): Promise<void> {
  const name = partitionName(day);
  const from = new Date(day).toISOString();
  const to = new Date(day + DAY_MS).toISOString();
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS ${name} PARTITION OF audit_entries FOR VALUES FROM ('${from}') TO ('${to}')`);
  } catch (error) {
    // Another instance created it between IF NOT EXISTS and CREATE: the partition exists.
    const exists = await client.query('SELECT 1 FROM pg_class WHERE relname = $1', [name]);
    if (exists.length === 0) throw error;
  }
}

/** First millisecond (UTC) of the day containing `ts`. */
export function dayStart(ts: number): number {
  return ts - (((ts % DAY_MS) + DAY_MS) % DAY_MS);
}

function partitionName(day: number): string {
  return `audit_entries_${new Date(day).toISOString().slice(0, 10).replace(/-/g, '')}`;
}

/** First millisecond (UTC) of the day a partition holds, or null for a table that is not a day partition. */
export function partitionStart(name: string): number | null {
  const match = PARTITION_NAME.exec(name);
  return match ? Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])) : null;
}
