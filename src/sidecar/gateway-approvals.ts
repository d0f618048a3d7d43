import { Injectable } from '@nestjs/common';
import { AppError } from '../core/common/app-error';
import { ErrorCode } from '../core/common/error-code';
import type { ApprovalDesk, ApprovalSubject, PendingApproval, Redemption } from '../core/decision/approval-ports';
import type { ApprovalRequirement, Decision } from '../core/policy-engine/types';
import { GatewayLink } from './gateway-link';

/**
 * Approvals at the edge (docs/approvals.md): they live at the gateway, so the sidecar asks it for
 * each (its sidecar credential, `POST /api/v1/edge/approvals`), and while the gateway cannot be
 * reached a request a `require_approval` rule holds is denied, saying so: nobody could approve it.
 */
@Injectable()
export class GatewayApprovals implements ApprovalDesk {
  constructor(private readonly gateway: GatewayLink) {}

  async open(subject: ApprovalSubject, decision: Decision & { approval: ApprovalRequirement }): Promise<PendingApproval> {
    const body = { subject, policy: decision.policy, rule: decision.rule, reason: decision.reason, approvers: decision.approval.approvers, timeoutMs: decision.approval.timeoutMs };
    return this.ask<PendingApproval>('/api/v1/edge/approvals', body);
  }

  async redeem(approvalId: string, subject: ApprovalSubject): Promise<Redemption> {
    return this.ask<Redemption>(`/api/v1/edge/approvals/${encodeURIComponent(approvalId)}/redeem`, { subject });
  }

  private async ask<T>(path: string, body: object): Promise<T> {
    const answer = await this.gateway.post(path, [Buffer.from(JSON.stringify(body))]);
    if (answer === 'unreachable') throw unavailable('the gateway cannot be reached');
    if (answer.status !== 200 && answer.status !== 201) throw unavailable(`the gateway answered ${answer.status}`);
    return JSON.parse(answer.text) as T;
  }
}

function unavailable(why: string): AppError {
  return new AppError(ErrorCode.Forbidden, `Approval needed, but ${why}: approvals are asked at the gateway (docs/approvals.md)`);
}
