import { Inject, Injectable } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Logger } from 'pino';
import { LOGGER } from '../../core/logging/logging.module';
import { PLANS, PlanId, UNLIMITED } from '../../core/config/plans';
import { createDayPartition, dayStart } from './audit-days';
import { auditSelectList, ChainedAudit, readAudit } from '../../core/audit-record/audit-entry';
import { ROLLUP_TABLES } from './audit-rollups';
import { AuditPartition, AuditPartitions } from './audit-partitions';

const DAY_MS = 86_400_000;

export interface RetentionReport {
  droppedPartitions: string[];
  deletedEntries: number;
}

/**
 * Enforces each plan's `auditRetentionDays`. A day's partition is dropped whole once every
 * organization with entries in it has passed its retention; where organizations on longer
 * plans share the day, only the expired organizations' rows are deleted. Each chain head
 * records how far retention pruned it, so verification tells pruning from tampering. The
 * analytics rollups of the removed entries go in the same transaction.
 */
@Injectable()
export class AuditRetention {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly partitions: AuditPartitions,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @Cron(CronExpression.EVERY_HOUR, { name: 'audit-retention' })
  async scheduled(): Promise<void> {
    try {
      const report = await this.enforce(Date.now());
      // Tomorrow's partition ahead of time, so the first write after midnight needs no DDL.
      await createDayPartition(this.dataSource, dayStart(Date.now() + DAY_MS));
      if (report.droppedPartitions.length > 0 || report.deletedEntries > 0) this.logger.info(report, 'audit retention enforced');
    } catch (error) {
      this.logger.error({ err: error }, 'audit retention failed');
    }
  }

  /** Applies retention as of `nowMs`: an entry expires when older than its organization's retention. */
  async enforce(nowMs: number): Promise<RetentionReport> {
    const retention = await this.retentionByOrg();
    const cutoffs = cutoffsOf(retention, nowMs);
    const keptFrom = await this.keptFrom(cutoffs);
    const report: RetentionReport = { droppedPartitions: [], deletedEntries: 0 };
    const today = dayStart(nowMs);
    for (const partition of await this.partitions.list()) {
      if (partition.startMs >= today) continue;
      const partitionEnd = partition.startMs + DAY_MS;
      const orgIds: Array<{ org_id: string }> = await this.dataSource.query(`SELECT DISTINCT org_id FROM ${partition.name}`);
      const expired = orgIds.map((row) => row.org_id).filter((orgId) => isExpired(retention.get(orgId), partitionEnd, nowMs));
      if (expired.length === orgIds.length && !(await this.holdsKeptChain(partition.name, keptFrom))) {
        await this.dropPartition(partition);
        report.droppedPartitions.push(partition.name);
        continue;
      }
      report.deletedEntries += await this.deleteExpiredRows(partition.name, cutoffs, keptFrom);
    }
    await this.pruneRollups([...retention.keys()], cutoffs);
    return report;
  }

  /**
   * Analytics rollups of the hours wholly past each organization's retention, and of
   * organizations that no longer exist. The hour a cut-off falls in goes on a later run, once
   * it has passed entirely, so rollups never drop counts of entries still kept.
   */
  private async pruneRollups(orgIds: string[], cutoffs: Cutoffs): Promise<void> {
    const params = [orgIds, cutoffs.orgIds, cutoffs.times];
    await this.dataSource.transaction(async (manager) => {
      for (const table of ROLLUP_TABLES) {
        await manager.query(
          `DELETE FROM ${table} t WHERE NOT (t.org_id = ANY($1::text[]))
             OR EXISTS (SELECT 1 FROM unnest($2::text[], $3::timestamptz[]) AS c(org_id, cutoff) WHERE c.org_id = t.org_id AND t.hour + interval '1 hour' <= c.cutoff)`,
          params,
        );
      }
    });
  }

  /**
   * Per organization with a limited retention, the first sequence number it keeps: that of its
   * oldest-numbered entry still within retention. Only the entries numbered below it are
   * removed, so what is removed is always the start of the chain, which the pruning mark
   * stands for. An entry written late with an expired time (a sidecar's, forwarded after days
   * offline) is numbered after entries still kept: removing it would move the mark past them,
   * and verification would no longer cover them. It goes with them instead.
   */
  private async keptFrom(cutoffs: Cutoffs): Promise<Map<string, number>> {
    if (cutoffs.orgIds.length === 0) return new Map();
    const rows: Array<{ org_id: string; seq: string | null }> = await this.dataSource.query(
      `SELECT c.org_id, (SELECT e.seq FROM audit_entries e WHERE e.org_id = c.org_id AND e.ts >= c.cutoff ORDER BY e.seq LIMIT 1) AS seq
       FROM unnest($1::text[], $2::timestamptz[]) AS c(org_id, cutoff)`,
      [cutoffs.orgIds, cutoffs.times],
    );
    return new Map(rows.flatMap((row) => (row.seq === null ? [] : [[row.org_id, Number(row.seq)]])));
  }

  /** Whether a partition holds an entry numbered at or after where its organization's kept chain starts. */
  private async holdsKeptChain(partition: string, keptFrom: Map<string, number>): Promise<boolean> {
    if (keptFrom.size === 0) return false;
    const rows: unknown[] = await this.dataSource.query(
      `SELECT 1 FROM ${partition} t, unnest($1::text[], $2::bigint[]) AS k(org_id, seq) WHERE t.org_id = k.org_id AND t.seq >= k.seq LIMIT 1`,
      [[...keptFrom.keys()], [...keptFrom.values()]],
    );
    return rows.length > 0;
  }

  /** Drops a whole day, first recording in each chain head how far its chain was pruned. */
  private async dropPartition(partition: AuditPartition): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      const last: Array<Record<string, unknown>> = await manager.query(`SELECT DISTINCT ON (org_id) ${TAIL_COLUMNS} FROM ${partition.name} ORDER BY org_id, seq DESC`);
      await markPruned(manager, last.map(readTail));
      await manager.query(`DROP TABLE IF EXISTS ${partition.name}`);
    });
  }

  /** Rows of a shared day whose organization's cut-off has passed. */
  private async deleteExpiredRows(partition: string, cutoffs: Cutoffs, keptFrom: Map<string, number>): Promise<number> {
    if (cutoffs.orgIds.length === 0) return 0;
    const params = [cutoffs.orgIds, cutoffs.times, cutoffs.orgIds.map((orgId) => keptFrom.get(orgId) ?? null)];
    const expiredRows = `${partition} t, unnest($1::text[], $2::timestamptz[], $3::bigint[]) AS c(org_id, cutoff, kept_from)
      WHERE t.org_id = c.org_id AND t.ts < c.cutoff AND (c.kept_from IS NULL OR t.seq < c.kept_from)`;
    return this.dataSource.transaction(async (manager) => {
      const last: Array<Record<string, unknown>> = await manager.query(
        `SELECT DISTINCT ON (t.org_id) ${auditSelectList(TAIL_FIELDS, 't')} FROM ${expiredRows} ORDER BY t.org_id, t.seq DESC`,
        params,
      );
      if (last.length === 0) return 0;
      await markPruned(manager, last.map(readTail));
      const deleted: Array<{ count: string }> = await manager.query(
        `WITH d AS (DELETE FROM ${partition} t USING unnest($1::text[], $2::timestamptz[], $3::bigint[]) AS c(org_id, cutoff, kept_from)
           WHERE t.org_id = c.org_id AND t.ts < c.cutoff AND (c.kept_from IS NULL OR t.seq < c.kept_from) RETURNING 1)
         SELECT count(*) AS count FROM d`,
        params,
      );
      return Number(deleted[0].count);
    });
  }

  private async retentionByOrg(): Promise<Map<string, number>> {
    const rows: Array<{ id: string; plan: PlanId }> = await this.dataSource.query('SELECT id, plan FROM organizations');
    return new Map(rows.map((row) => [row.id, PLANS[row.plan]?.limits.auditRetentionDays ?? UNLIMITED]));
  }
}

/** The newest entry retention removes from an organization's chain. */
const TAIL_FIELDS = ['orgId', 'seq', 'hash'] as const;
const TAIL_COLUMNS = auditSelectList(TAIL_FIELDS);
type PrunedTail = Pick<ChainedAudit, (typeof TAIL_FIELDS)[number]>;

function readTail(row: Record<string, unknown>): PrunedTail {
  return readAudit(row, TAIL_FIELDS);
}

/**
 * Moves each chain's pruning mark forward (never back). Heads are locked in org_id order, the
 * order the writer locks them in, so retention and writes cannot deadlock.
 */
async function markPruned(manager: EntityManager, tails: PrunedTail[]): Promise<void> {
  if (tails.length === 0) return;
  const orgIds = tails.map((tail) => tail.orgId);
  await manager.query('SELECT org_id FROM audit_chain_heads WHERE org_id = ANY($1::text[]) ORDER BY org_id FOR UPDATE', [orgIds]);
  await manager.query(
    `UPDATE audit_chain_heads h SET pruned_seq = u.seq, pruned_hash = u.hash
     FROM unnest($1::text[], $2::bigint[], $3::text[]) AS u(org_id, seq, hash)
     WHERE h.org_id = u.org_id AND h.pruned_seq < u.seq`,
    [orgIds, tails.map((tail) => tail.seq), tails.map((tail) => tail.hash)],
  );
}

/** Organizations with a limited retention, and the time before which their entries expire. */
interface Cutoffs {
  orgIds: string[];
  times: Date[];
}

function cutoffsOf(retention: Map<string, number>, nowMs: number): Cutoffs {
  const limited = [...retention].filter(([, days]) => days !== UNLIMITED);
  return { orgIds: limited.map(([orgId]) => orgId), times: limited.map(([, days]) => new Date(nowMs - days * DAY_MS)) };
}

function isExpired(retentionDays: number | undefined, partitionEndMs: number, nowMs: number): boolean {
  if (retentionDays === undefined) return true;
  if (retentionDays === UNLIMITED) return false;
  return partitionEndMs <= nowMs - retentionDays * DAY_MS;
}
