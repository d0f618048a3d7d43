import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { newId } from '../../core/common/ids';
import { AppConfig } from '../../core/config/app-config';
import type { ApprovalDesk, ApprovalSubject, PendingApproval, Redemption } from '../../core/decision/approval-ports';
import type { ApprovalRequirement, Decision } from '../../core/policy-engine/types';

interface RedeemRow {
  status: string;
  agent_id: string;
  source: string;
  action: string;
  derived_action: string | null;
  plugin: string;
  function: string;
  method: string | null;
  path: string | null;
  holds: string[];
  fingerprint: string;
  expires_at: Date;
  decided_by: string | null;
  used_at: Date | null;
}

/**
 * The gateway's approvals, in PostgreSQL (table `approvals`). Redeeming is one conditional
 * update, so of two requests presenting the same approved approval at once exactly one passes;
 * it matches the whole subject (src/core/decision/approval-binding.ts), and the request's holds must
 * all be among those the approval was asked for.
 */
@Injectable()
export class StoredApprovals implements ApprovalDesk {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  /**
   * Opens an approval, unless the agent already has APPROVALS_MAX_PENDING_PER_AGENT pending ones:
   * then the request is denied, naming the cap (docs/approvals.md "Listing and limits"), so one
   * agent's flood cannot bury another's request. The count and the insert run under a lock of
   * the agent's own, so parallel requests cannot pass the cap together.
   */
  async open(subject: ApprovalSubject, decision: Decision & { approval: ApprovalRequirement }): Promise<PendingApproval> {
    const id = newId('appr');
    const expiresAt = new Date(Date.now() + decision.approval.timeoutMs);
    const cap = this.config.approvals.maxPendingPerAgent;
    return this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', [subject.orgId, subject.agentId]);
      const [{ pending }]: Array<{ pending: number }> = await manager.query(
        `SELECT count(*)::int AS pending FROM approvals WHERE org_id = $1 AND agent_id = $2 AND status = 'pending' AND expires_at > now()`,
        [subject.orgId, subject.agentId],
      );
      if (pending >= cap) throw new AppError(ErrorCode.Forbidden, `Approval needed, but agent ${subject.agentId} already has ${cap} pending approvals, the most one agent may have open (APPROVALS_MAX_PENDING_PER_AGENT): wait for a person to decide them`);
      await manager.query(
        `INSERT INTO approvals (id, org_id, status, agent_id, agent_name, source, action, derived_action, plugin, function, method, path, holds, fingerprint, policy, rule, reason, approvers, trace_id, expires_at)
         VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb, $13, $14, $15, $16, $17, $18, $19)`,
        [
          id,
          subject.orgId,
          subject.agentId,
          subject.agentName,
          subject.source,
          subject.action,
          subject.derivedAction,
          subject.plugin,
          subject.function,
          subject.method,
          subject.path,
          JSON.stringify(subject.holds),
          subject.fingerprint,
          decision.policy,
          decision.rule,
          decision.reason,
          JSON.stringify(decision.approval.approvers),
          subject.traceId,
          expiresAt,
        ],
      );
      return { approvalId: id, expiresAt: expiresAt.toISOString() };
    });
  }

  async redeem(approvalId: string, subject: ApprovalSubject): Promise<Redemption> {
    const used: Array<{ decided_by: string }> = await this.dataSource.query(
      `WITH used AS (UPDATE approvals SET status = 'used', used_at = now()
         WHERE id = $1 AND org_id = $2 AND agent_id = $3 AND source = $4 AND action = $5 AND derived_action IS NOT DISTINCT FROM $6
           AND plugin = $7 AND function = $8 AND method IS NOT DISTINCT FROM $9 AND path IS NOT DISTINCT FROM $10
           AND holds @> $11::jsonb AND fingerprint = $12 AND status = 'approved' AND expires_at > now()
         RETURNING decided_by) SELECT decided_by FROM used`,
      [
        approvalId,
        subject.orgId,
        subject.agentId,
        subject.source,
        subject.action,
        subject.derivedAction,
        subject.plugin,
        subject.function,
        subject.method,
        subject.path,
        JSON.stringify(subject.holds),
        subject.fingerprint,
      ],
    );
    if (used.length === 1) return { granted: true, decidedBy: used[0].decided_by };
    const rows: RedeemRow[] = await this.dataSource.query(
      `SELECT status, agent_id, source, action, derived_action, plugin, function, method, path, holds, fingerprint, expires_at, decided_by, used_at
         FROM approvals WHERE id = $1 AND org_id = $2`,
      [approvalId, subject.orgId],
    );
    return { granted: false, reason: refusalOf(rows[0], subject) };
  }
}

/** Why an approval does not let this request through: the first part of the subject that differs, else its state. */
function refusalOf(row: RedeemRow | undefined, subject: ApprovalSubject): string {
  if (row === undefined) return 'is unknown';
  if (row.agent_id !== subject.agentId) return 'was asked for another agent';
  if (row.source !== subject.source) return `was asked through another entry point (${row.source})`;
  if (row.action !== subject.action) return `was asked for another action (${row.action})`;
  if (row.derived_action !== subject.derivedAction) return `was asked for another request (${row.derived_action ?? row.action})`;
  if (row.plugin !== subject.plugin || row.function !== subject.function) return `was asked for another plugin or function (${row.plugin}.${row.function})`;
  if (row.method !== subject.method || row.path !== subject.path) return `was asked for another method or path (${row.method ?? ''} ${row.path ?? ''})`;
  const approved = new Set(Array.isArray(row.holds) ? row.holds : []);
  const unapproved = subject.holds.filter((hold) => !approved.has(hold));
  if (unapproved.length > 0) return `was not asked for the hold of ${unapproved.join(', ')}`;
  if (row.fingerprint !== subject.fingerprint) return 'was asked for another request (its body, arguments, resource or context differ)';
  if (row.status === 'used') return 'was already used: an approval lets one request through';
  if (row.status === 'rejected') return `was rejected by ${row.decided_by ?? 'an admin'}`;
  if (new Date(row.expires_at).getTime() <= Date.now()) return 'has expired';
  return 'is still waiting for a person';
}
