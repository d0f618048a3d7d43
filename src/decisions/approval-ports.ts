import type { ApprovalRequirement, Decision } from '../policy-engine/types';

/** What an approval is bound to: the very request a `require_approval` rule held. */
export interface ApprovalSubject {
  orgId: string;
  agentId: string;
  agentName: string;
  source: string;
  action: string;
  method: string | null;
  path: string | null;
  /** SHA-256 of what the request carries (the proxy's method, path, query and body; a call's arguments). */
  fingerprint: string;
  traceId: string;
}

/** A request waiting for a person. */
export interface PendingApproval {
  approvalId: string;
  expiresAt: string;
}

/** The outcome of presenting an approval id with a request. */
export type Redemption = { granted: true; decidedBy: string } | { granted: false; reason: string };

/**
 * Where approvals live (docs/approvals.md): the gateway keeps them in PostgreSQL; the sidecar
 * asks the gateway, and denies when it cannot reach it.
 */
export interface ApprovalDesk {
  /** Opens a pending approval for the request the decision held. */
  open(subject: ApprovalSubject, decision: Decision & { approval: ApprovalRequirement }): Promise<PendingApproval>;
  /**
   * Uses an approved approval for the identical request (same organization, agent, action and
   * fingerprint), once; otherwise says why not (unknown, pending, rejected, expired, used, or
   * for another request).
   */
  redeem(approvalId: string, subject: ApprovalSubject): Promise<Redemption>;
}

export const APPROVAL_DESK = Symbol('ApprovalDesk');

/** Where no approvals can be asked for (a host without a desk): every such request is denied, saying so. */
export const NO_APPROVALS: ApprovalDesk = {
  open: () => Promise.reject(new Error('approvals are not available here')),
  redeem: () => Promise.resolve({ granted: false, reason: 'approvals are not available here' }),
};
