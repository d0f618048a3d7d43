import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { SqlClient } from './sql-client';

const DAY_MS = 24 * 60 * 60 * 1000;
const PARTITION_NAME = /^audit_entries_(\d{4})(\d{2})(\d{2})$/;

/** One day's partition of audit_entries. */
export interface AuditPartition {
  name: string;
  /** First millisecond of the day (UTC). */
  startMs: number;
}

/** Lists the daily partitions of audit_entries (retention drops them). */
@Injectable()
export class AuditPartitions {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Existing partitions, oldest first. */
  async list(): Promise<AuditPartition[]> {
    const rows: Array<{ name: string }> = await this.dataSource.query(
      `SELECT c.relname AS name FROM pg_inherits i
       JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
       WHERE p.relname = 'audit_entries' ORDER BY c.relname`,
    );
    return rows.flatMap(({ name }) => {
      const match = PARTITION_NAME.exec(name);
      return match ? [{ name, startMs: Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])) }] : [];
    });
  }
}

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
