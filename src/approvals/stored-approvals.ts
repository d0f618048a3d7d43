import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { newId } from '../common/ids';
import type { ApprovalDesk, ApprovalSubject, PendingApproval, Redemption } from '../decisions/approval-ports';
import type { ApprovalRequirement, Decision } from '../policy-engine/types';

interface RedeemRow {
  status: string;
  agent_id: string;
  action: string;
  fingerprint: string;
  expires_at: Date;
  decided_by: string | null;
  used_at: Date | null;
}

/**
 * The gateway's approvals, in PostgreSQL (table `approvals`). Redeeming is one conditional
 * update, so of two requests presenting the same approved approval at once exactly one passes.
 */
@Injectable()
export class StoredApprovals implements ApprovalDesk {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async open(subject: ApprovalSubject, decision: Decision & { approval: ApprovalRequirement }): Promise<PendingApproval> {
    const id = newId('appr');
    const expiresAt = new Date(Date.now() + decision.approval.timeoutMs);
    await this.dataSource.query(
      `INSERT INTO approvals (id, org_id, status, agent_id, agent_name, source, action, method, path, fingerprint, policy, rule, reason, approvers, trace_id, expires_at)
       VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
      [
        id,
        subject.orgId,
        subject.agentId,
        subject.agentName,
        subject.source,
        subject.action,
        subject.method,
        subject.path,
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
  }

  async redeem(approvalId: string, subject: ApprovalSubject): Promise<Redemption> {
    const used: Array<{ decided_by: string }> = await this.dataSource.query(
      `WITH used AS (UPDATE approvals SET status = 'used', used_at = now()
         WHERE id = $1 AND org_id = $2 AND agent_id = $3 AND action = $4 AND fingerprint = $5 AND status = 'approved' AND expires_at > now()
         RETURNING decided_by) SELECT decided_by FROM used`,
      [approvalId, subject.orgId, subject.agentId, subject.action, subject.fingerprint],
    );
    if (used.length === 1) return { granted: true, decidedBy: used[0].decided_by };
    const rows: RedeemRow[] = await this.dataSource.query(
      'SELECT status, agent_id, action, fingerprint, expires_at, decided_by, used_at FROM approvals WHERE id = $1 AND org_id = $2',
      [approvalId, subject.orgId],
    );
    return { granted: false, reason: refusalOf(rows[0], subject) };
  }
}

/** Why an approval does not let this request through. */
function refusalOf(row: RedeemRow | undefined, subject: ApprovalSubject): string {
  if (row === undefined) return 'is unknown';
  if (row.agent_id !== subject.agentId) return 'was asked for another agent';
  if (row.action !== subject.action) return `was asked for another action (${row.action})`;
  if (row.fingerprint !== subject.fingerprint) return 'was asked for another request (its body, arguments, resource or context differ)';
  if (row.status === 'used') return 'was already used: an approval lets one request through';
  if (row.status === 'rejected') return `was rejected by ${row.decided_by ?? 'an admin'}`;
  if (new Date(row.expires_at).getTime() <= Date.now()) return 'has expired';
  return 'is still waiting for a person';
}
