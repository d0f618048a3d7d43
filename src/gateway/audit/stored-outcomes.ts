import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../core/config/app-config';
import type { OutcomeLedger } from '../../core/decision/adapter-ports';
import { decisionSecondOf } from '../../core/decision/decision-id';
import type { LinkedDecision } from '../../core/decision/decision-links';
import { PLANS, PlanId, UNLIMITED } from '../../core/config/plans';

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

  /** One statement per batch; an eventId sent twice in one batch is claimed by its first event. */
  async claim(orgId: string, claims: ReadonlyArray<{ eventId: string; auditId: string }>): Promise<Set<string>> {
    const first = new Map<string, string>();
    for (const { eventId, auditId } of claims) if (!first.has(eventId)) first.set(eventId, auditId);
    const rows: Array<{ event_id: string }> = await this.dataSource.query(
      `INSERT INTO adapter_audit_events (org_id, event_id, audit_id) SELECT $1, e.event_id, e.audit_id FROM unnest($2::text[], $3::text[]) AS e(event_id, audit_id)
       ON CONFLICT DO NOTHING RETURNING event_id`,
      [orgId, [...first.keys()], [...first.values()]],
    );
    return new Set(rows.map((row) => row.event_id));
  }

  async auditRetentionDays(orgId: string): Promise<number> {
    const rows: Array<{ plan: PlanId }> = await this.dataSource.query('SELECT plan FROM organizations WHERE id = $1', [orgId]);
    return rows[0] === undefined ? UNLIMITED : (PLANS[rows[0].plan]?.limits.auditRetentionDays ?? UNLIMITED);
  }

  private async findIn(orgId: string, decisionId: string, second: number): Promise<LinkedDecision | null> {
    const rows: StoredDecision[] = await this.dataSource.query(
      `SELECT agent_id, decision, enforced, input->>'plugin' AS plugin, input->>'function' AS function, policy_name, rule, reason FROM audit_entries
        WHERE ts >= $1 AND ts < $2 AND id = $3 AND org_id = $4 AND kind = 'decision'`,
      [new Date(second), new Date(second + 1000), decisionId, orgId],
    );
    const row = rows[0];
    if (row === undefined) return null;
    return {
      orgId,
      agentId: row.agent_id ?? '',
      plugin: row.plugin ?? '',
      function: row.function ?? '',
      allowed: row.decision === 'allow' || !row.enforced,
      policyName: row.policy_name,
      rule: row.rule,
      reason: row.reason,
    };
  }
}

interface StoredDecision {
  agent_id: string | null;
  decision: string;
  enforced: boolean;
  plugin: string | null;
  function: string | null;
  policy_name: string | null;
  rule: string | null;
  reason: string | null;
}
