import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import type { ApprovalSubject, PendingApproval, Redemption } from '../../core/decision/approval-ports';
import { SidecarTokenAccepted } from '../access/sidecar-token-access';
import { ApprovalStatusDto } from './approvals.dto';
import { ApprovalsService } from './approvals.service';
import { StoredApprovals } from './stored-approvals';

/** What a sidecar sends of a request its `require_approval` rule holds (src/sidecar/gateway-approvals.ts). */
interface EdgeApprovalRequest {
  subject: ApprovalSubject;
  policy: string;
  rule: string | null;
  reason: string;
  approvers: string[];
  timeoutMs: number;
}

const MAX_TIMEOUT_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * The gateway's approvals for the edge (docs/approvals.md): a sidecar opens and redeems approvals
 * for its organization with its sidecar token, and asks where one stands for the adapters that
 * wait on it (its `GET /v1/approvals/:id`); the subject must be of that organization.
 */
@ApiExcludeController()
@AdminAuth()
@SidecarTokenAccepted()
@Controller('api/v1/edge/approvals')
export class EdgeApprovalsController {
  constructor(
    private readonly approvals: StoredApprovals,
    private readonly decided: ApprovalsService,
  ) {}

  @Get(':id')
  async status(@CurrentAdmin() principal: AdminPrincipal, @Param('id') id: string): Promise<ApprovalStatusDto> {
    const { status, expiresAt } = await this.decided.get(principal.orgId, id);
    return { id, status, expiresAt };
  }

  @Post()
  @HttpCode(201)
  open(@CurrentAdmin() principal: AdminPrincipal, @Body() sent: unknown): Promise<PendingApproval> {
    const body = fieldsOf(sent) as Partial<EdgeApprovalRequest>;
    const subject = subjectOf(principal, body.subject);
    const { timeoutMs } = body;
    if (typeof body.policy !== 'string' || typeof body.reason !== 'string' || typeof timeoutMs !== 'number' || !Number.isSafeInteger(timeoutMs) || timeoutMs < 1000 || timeoutMs > MAX_TIMEOUT_MS) {
      throw AppError.invalid('policy, reason and timeoutMs (1 s to 7 d) are required');
    }
    const approvers = Array.isArray(body.approvers) ? body.approvers.filter((tag): tag is string => typeof tag === 'string') : [];
    return this.approvals.open(subject, { effect: 'deny', policy: body.policy, rule: typeof body.rule === 'string' ? body.rule : null, reason: body.reason, approval: { approvers, timeoutMs } });
  }

  @Post(':id/redeem')
  @HttpCode(200)
  redeem(@CurrentAdmin() principal: AdminPrincipal, @Param('id') id: string, @Body() sent: unknown): Promise<Redemption> {
    return this.approvals.redeem(id, subjectOf(principal, fieldsOf(sent).subject));
  }
}

/** The body's fields; none when it is missing or not an object (a POST without a JSON body leaves it undefined). */
function fieldsOf(sent: unknown): Record<string, unknown> {
  return typeof sent === 'object' && sent !== null && !Array.isArray(sent) ? (sent as Record<string, unknown>) : {};
}

/** The subject, checked field by field; its organization must be the caller's. */
function subjectOf(principal: AdminPrincipal, value: unknown): ApprovalSubject {
  const subject = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const text = (name: string, nullable = false) => {
    const field = subject[name];
    if (typeof field === 'string' && field.length <= 4096) return field;
    if (nullable && field === null) return null;
    throw AppError.invalid(`subject.${name} must be a string`);
  };
  if (text('orgId') !== principal.orgId) throw AppError.invalid('subject.orgId must be the sidecar’s organization');
  const holds = subject.holds;
  if (!Array.isArray(holds) || holds.length > MAX_HOLDS || !holds.every((hold) => typeof hold === 'string' && hold.length <= 4096)) {
    throw AppError.invalid(`subject.holds must be a list of at most ${MAX_HOLDS} strings`);
  }
  return {
    orgId: principal.orgId,
    agentId: text('agentId')!,
    agentName: text('agentName')!,
    source: text('source')!,
    action: text('action')!,
    derivedAction: text('derivedAction', true),
    plugin: text('plugin')!,
    function: text('function')!,
    method: text('method', true),
    path: text('path', true),
    holds: holds as string[],
    fingerprint: text('fingerprint')!,
    traceId: text('traceId')!,
  };
}

/** Most `require_approval` rules one subject names (one per question a request is decided on at most). */
const MAX_HOLDS = 64;
