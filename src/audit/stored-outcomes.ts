import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import type { OutcomeLedger } from '../decisions/adapter-ports';
import { decisionSecondOf } from '../decisions/decision-id';
import type { LinkedDecision } from '../decisions/decision-links';

/** A decision this recent may still be queued for writing on another instance. */
const STORED_LOOKUP_WINDOW_MS = 60_000;

/**
 * The gateway's outcome ledger: decisions looked up in the audit trail by their id (which
 * carries its second, so the lookup is a primary-key probe of one partition), and the
 * `adapter_audit_events` table that records each outcome's eventId once.
 */
@Injectable()
export class StoredOutcomes implements OutcomeLedger {
  private readonly flushMs: number;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    config: AppConfig,
  ) {
    this.flushMs = config.audit.flushMs;
  }

  /** A decision's entry may still be queued on the instance that made it: one more look after a flush interval. */
  async findDecision(orgId: string, decisionId: string): Promise<LinkedDecision | null> {
    const second = decisionSecondOf(decisionId);
    if (second === undefined) return null;
    const found = await this.findIn(orgId, decisionId, second);
    if (found !== null || Date.now() - second > STORED_LOOKUP_WINDOW_MS) return found;
    await new Promise((resolve) => setTimeout(resolve, this.flushMs * 2));
    return this.findIn(orgId, decisionId, second);
  }

  async claim(orgId: string, eventId: string, auditId: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(
      `INSERT INTO adapter_audit_events (org_id, event_id, audit_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING event_id`,
      [orgId, eventId, auditId],
    );
    return rows.length === 1;
  }

  private async findIn(orgId: string, decisionId: string, second: number): Promise<LinkedDecision | null> {
    const rows: Array<{ agent_id: string | null; decision: string; enforced: boolean; plugin: string | null; function: string | null }> = await this.dataSource.query(
      `SELECT agent_id, decision, enforced, input->>'plugin' AS plugin, input->>'function' AS function FROM audit_entries
        WHERE ts >= $1 AND ts < $2 AND id = $3 AND org_id = $4 AND kind = 'decision'`,
      [new Date(second), new Date(second + 1000), decisionId, orgId],
    );
    const row = rows[0];
    if (row === undefined) return null;
    return { orgId, agentId: row.agent_id ?? '', plugin: row.plugin ?? '', function: row.function ?? '', allowed: row.decision === 'allow' || !row.enforced };
  }
}
