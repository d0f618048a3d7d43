import type { ApprovalRequirement, Decision } from '../policy-engine/types';

/** What an approval is bound to: the very request a `require_approval` rule held, as a whole (approval-binding.ts). */
export interface ApprovalSubject {
  orgId: string;
  agentId: string;
  agentName: string;
  /** The entry point (`proxy`, `check`, `pdp`, `mcp`, `sidecar`): an approval is spent where it was asked for. */
  source: string;
  /** The action decided on: the declared one where the caller declared one. */
  action: string;
  /** The action the transport derived, when the caller declared another one; else null. */
  derivedAction: string | null;
  plugin: string;
  function: string;
  method: string | null;
  path: string | null;
  /** The `require_approval` rules that held the request (`policy: rule`, sorted): an approval lifts these and no other. */
  holds: string[];
  /** SHA-256 of the rest of the decision input: resource, context, delegation chain, MCP tool, and what the request carries. */
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
   * Uses an approved approval for the identical request (the same subject, its holds among those
   * approved), once; otherwise says why not (unknown, pending, rejected, expired, used, or for
   * another request).
   */
  redeem(approvalId: string, subject: ApprovalSubject): Promise<Redemption>;
}

export const APPROVAL_DESK = Symbol('ApprovalDesk');

/** Where no approvals can be asked for (a host without a desk): every such request is denied, saying so. */
export const NO_APPROVALS: ApprovalDesk = {
  open: () => Promise.reject(new Error('approvals are not available here')),
  redeem: () => Promise.resolve({ granted: false, reason: 'approvals are not available here' }),
};
