import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { ApprovalListView, ApprovalQueryDto, ApprovalStatus, ApprovalView } from './approvals.dto';

interface ApprovalRow {
  id: string;
  org_id: string;
  status: string;
  agent_id: string;
  agent_name: string;
  source: string;
  action: string;
  derived_action: string | null;
  method: string | null;
  path: string | null;
  policy: string;
  rule: string | null;
  reason: string;
  approvers: string[];
  trace_id: string | null;
  created_at: Date;
  expires_at: Date;
  decided_by: string | null;
  decided_at: Date | null;
  comment: string | null;
  used_at: Date | null;
}

/** Who decides: an admin (its token id, or `cli`), or the holder of a signed link. */
export interface Decider {
  orgId: string;
  tokenId: string;
}

/** An adapter's view of an approval it waits for. */
export interface ApprovalStatusView {
  id: string;
  status: ApprovalStatus;
  expiresAt: string;
}

/** The page size when the query names none. */
const DEFAULT_PAGE = 100;

const COLUMNS = 'id, org_id, status, agent_id, agent_name, source, action, derived_action, method, path, policy, rule, reason, approvers, trace_id, created_at, expires_at, decided_by, decided_at, comment, used_at';

/**
 * Approvals as admins see and decide them (docs/approvals.md): an organization's own (another's
 * answer 404); a decision is taken once, before expiry, and recorded in the audit trail.
 */
@Injectable()
export class ApprovalsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly audit: AuditService,
  ) {}

  /**
   * One page of the organization's approvals, newest first by (created_at, id), a stable order
   * however many arrive meanwhile; `nextCursor` is where the next page starts (docs/approvals.md
   * "Listing and limits").
   */
  async list(admin: AdminPrincipal, query: ApprovalQueryDto): Promise<ApprovalListView> {
    const params: unknown[] = [admin.orgId];
    const where = ['org_id = $1'];
    const { status } = query;
    if (status === 'pending') where.push(`status = 'pending' AND expires_at > now()`);
    else if (status === 'expired') where.push(`status = 'pending' AND expires_at <= now()`);
    else if (status !== undefined) where.push(`status = '${status}'`);
    if (query.agentId !== undefined) {
      params.push(query.agentId);
      where.push(`agent_id = $${params.length}`);
    }
    if (query.cursor !== undefined) {
      const [createdMicros, id] = decodeCursor(query.cursor);
      params.push(createdMicros, id);
      where.push(`(created_at, id) < (timestamptz 'epoch' + $${params.length - 1}::bigint * interval '1 microsecond', $${params.length})`);
    }
    const limit = query.limit ?? DEFAULT_PAGE;
    params.push(limit + 1);
    const rows: Array<ApprovalRow & { created_micros: string }> = await this.dataSource.query(
      `SELECT ${COLUMNS}, (extract(epoch FROM created_at) * 1000000)::bigint::text AS created_micros
         FROM approvals WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
      params,
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { approvals: page.map(toView), nextCursor: rows.length > limit ? encodeCursor(last.created_micros, last.id) : null };
  }

  /** The organization an approval belongs to (for its signed links, which carry no credential), else null. */
  async orgOf(id: string): Promise<string | null> {
    const rows: Array<{ org_id: string }> = await this.dataSource.query('SELECT org_id FROM approvals WHERE id = $1', [id]);
    return rows[0]?.org_id ?? null;
  }

  async get(orgId: string, id: string): Promise<ApprovalView> {
    const rows: ApprovalRow[] = await this.dataSource.query(`SELECT ${COLUMNS} FROM approvals WHERE id = $1 AND org_id = $2`, [id, orgId]);
    if (rows[0] === undefined) throw AppError.notFound('approval', id);
    return toView(rows[0]);
  }

  /** Approves or rejects a pending, unexpired approval of the decider's organization. */
  async decide(decider: Decider, id: string, verdict: 'approved' | 'rejected', comment?: string): Promise<ApprovalView> {
    const rows: ApprovalRow[] = await this.dataSource.query(
      `WITH decided AS (UPDATE approvals SET status = $3, decided_by = $4, decided_at = now(), comment = $5
         WHERE id = $1 AND org_id = $2 AND status = 'pending' AND expires_at > now() RETURNING ${COLUMNS}) SELECT * FROM decided`,
      [id, decider.orgId, verdict, decider.tokenId, comment ?? null],
    );
    const row = rows[0];
    if (row === undefined) {
      const current = await this.get(decider.orgId, id);
      throw new AppError(ErrorCode.Conflict, `approval ${id} is ${current.status}: only a pending approval can be decided`);
    }
    this.audit.recordAdminEvent(decider, {
      action: verdict === 'approved' ? 'approval.approve' : 'approval.reject',
      agentId: row.agent_id,
      agentName: row.agent_name,
      details: { approvalId: id, requestAction: row.action, policy: row.policy, comment: comment ?? null },
    });
    return toView(row);
  }
}

function toView(row: ApprovalRow): ApprovalView {
  const expiresAt = new Date(row.expires_at);
  const status = (row.status === 'pending' && expiresAt.getTime() <= Date.now() ? 'expired' : row.status) as ApprovalStatus;
  const iso = (value: Date | null) => (value === null ? null : new Date(value).toISOString());
  return {
    id: row.id,
    status,
    agentId: row.agent_id,
    agentName: row.agent_name,
    source: row.source,
    action: row.action,
    derivedAction: row.derived_action,
    method: row.method,
    path: row.path,
    policy: row.policy,
    rule: row.rule,
    reason: row.reason,
    approvers: Array.isArray(row.approvers) ? row.approvers : [],
    traceId: row.trace_id,
    createdAt: new Date(row.created_at).toISOString(),
    expiresAt: expiresAt.toISOString(),
    decidedBy: row.decided_by,
    decidedAt: iso(row.decided_at),
    comment: row.comment,
    usedAt: iso(row.used_at),
  };
}

/** The cursor after an approval: its creation time in microseconds (PostgreSQL's precision, which a JS Date would round) and its id. */
function encodeCursor(createdMicros: string, id: string): string {
  return Buffer.from(`${createdMicros}|${id}`).toString('base64url');
}

function decodeCursor(cursor: string): [string, string] {
  const [micros, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!/^\d{1,17}$/.test(micros ?? '') || !/^appr_[A-Za-z0-9]{1,64}$/.test(id ?? '')) throw AppError.invalid('cursor must be a nextCursor value returned by this endpoint');
  return [micros, id];
}
