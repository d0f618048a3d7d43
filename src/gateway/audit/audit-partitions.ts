import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { partitionStart } from './audit-days';

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
      const startMs = partitionStart(name);
      return startMs === null ? [] : [{ name, startMs }];
    });
  }
}
