/** What the client asks the gateway. */
export interface CheckRequest {
  agentId: string;
  plugin: string;
  function: string;
  args: Record<string, unknown>;
  context: Record<string, unknown>;
  trustTier: string;
  /** The approval of an earlier `pending` answer, presented for this very request (same agent, plugin, function, args). */
  approvalId?: string;
  /** The session the call belongs to (docs/policies.md "Sessions"); absent: the agent's own scope. */
  sessionId?: string;
}

/** The gateway's answer, the same whichever transport brought it. */
export interface GatewayDecision {
  /** `pending`: a `require_approval` rule holds the call until a person decides (docs/approvals.md). */
  decision: 'allow' | 'deny' | 'pending';
  reason: string;
  policy: string;
  rule: string;
  policyVersion: number;
  traceId: string;
  decisionId: string;
  cacheable: boolean;
  cacheTtlMs: number;
  /** False when the gateway's MODE=audit let a denial through (decision allow, the denying policy and reason named). */
  enforced: boolean;
  /** With `pending`: the approval opened for the call, to wait for and to retry with; '' otherwise. */
  approvalId: string;
  /** With `pending`: when the approval expires (ISO 8601); '' otherwise. */
  approvalExpiresAt: string;
}

/** Where an approval stands (GET /v1/approvals/:id): `expired` is pending past its expiry; `used` approved and spent. */
export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'used'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

/**
 * Where a check's answer came from: a transport, the cache, or the client itself when no answer
 * came: `timeout` (none within timeoutSeconds: allowed under fail-open, denied under fail-closed)
 * or `failure-mode` (the gateway unreachable, allowed under fail-open).
 */
export type AnswerSource = 'grpc' | 'http' | 'cache' | 'timeout' | 'failure-mode';

/** The result of `check()`: the gateway's answer, or the failure mode's. */
export interface CheckResult extends GatewayDecision {
  allowed: boolean;
  via: AnswerSource;
}

/** A way to ask the PDP for decisions. Errors: GatewayTimeoutError, GatewayUnavailableError, GatewayRejectedError. */
export interface Transport {
  readonly name: 'grpc' | 'http';
  evaluate(request: CheckRequest, timeoutMs: number): Promise<GatewayDecision>;
  /** Releases the transport's connections. */
  close(): void;
}
