import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import type { Decision, RateLimitTrip } from '../policy-engine/types';
import type { PendingApproval } from './approval-ports';

/** What of a verdict (DecisionService's `Verdict`) its answer reads. */
export interface AnsweredVerdict {
  /** The decision id. */
  id: string;
  decision: Decision;
  /** False when MODE=audit lets a denial through. */
  enforced: boolean;
  pending?: PendingApproval;
  request: { action: string; traceId: string };
}

/**
 * What a verdict comes to for its caller, whatever the transport: let through (allowed, or a
 * would-be denial MODE=audit lets pass), held for a person's approval, refused for now by a
 * tripped rate limit or a spent budget (a "try again later", not a "never"), or denied.
 */
export type Outcome = { kind: 'allowed' } | { kind: 'pending' } | Limited | { kind: 'denied' };

/** What a transport answers instead of doing what was asked. */
export type Refusal = Exclude<Outcome, { kind: 'allowed' }>;

/** A denial that says "later": a tripped `rate_limit` or a spent `budget` (docs/policies.md). */
export interface Limited {
  kind: 'limited';
  code: ErrorCode.RateLimited | ErrorCode.BudgetExceeded;
  trip: RateLimitTrip;
  message: string;
}

/**
 * How a transport answers a verdict. `refusing` ones stand between the agent and what it asks
 * for (the proxy, MCP) and refuse a denial with 403; `reporting` ones answer with the decision
 * itself (gRPC and HTTP PDP, `/v1/check`, the sidecar's `/enforce`), so a denial is a 200 whose
 * body says `deny`. Both answer a held request 202 and a tripped limit 429 (docs/pdp.md "One
 * decision for every entry point").
 */
export type AnswerMode = 'refusing' | 'reporting';

const ALLOWED: Outcome = { kind: 'allowed' };
const PENDING: Outcome = { kind: 'pending' };
const DENIED: Outcome = { kind: 'denied' };

export function outcomeOf(verdict: AnsweredVerdict): Outcome {
  const { decision } = verdict;
  if (verdict.pending !== undefined) return PENDING;
  if (decision.effect === 'allow' || !verdict.enforced) return ALLOWED;
  if (decision.rateLimit !== undefined) return { kind: 'limited', code: ErrorCode.RateLimited, trip: decision.rateLimit, message: `Rate limit exceeded: ${decision.reason}` };
  if (decision.budget !== undefined) return { kind: 'limited', code: ErrorCode.BudgetExceeded, trip: decision.budget, message: `Budget exceeded: ${decision.reason}` };
  return DENIED;
}

/** The HTTP status an outcome is answered with; an allowed proxied request answers the upstream's. */
export function statusOf(outcome: Outcome, mode: AnswerMode): number {
  switch (outcome.kind) {
    case 'allowed':
      return 200;
    case 'pending':
      return 202;
    case 'limited':
      return 429;
    case 'denied':
      return mode === 'refusing' ? 403 : 200;
  }
}

/** The 403 body of a denial (docs/proxy.md "Answers"). */
export function denialBody(verdict: AnsweredVerdict): { error: ErrorCode.Forbidden; message: string; reason: string; policy: string; action: string; trace_id: string } {
  const { decision, request } = verdict;
  return {
    error: ErrorCode.Forbidden,
    message: `Denied by policy ${decision.policy}: ${decision.reason}`,
    reason: decision.reason,
    policy: decision.policy,
    action: request.action,
    trace_id: request.traceId,
  };
}

/** The 429 body of a tripped limit (docs/proxy.md "Answers": `retry_after` seconds, also sent as Retry-After). */
export function limitBody(limited: Limited): { error: Limited['code']; message: string; retry_after: number; limit: string } {
  return { error: limited.code, message: limited.message, retry_after: limited.trip.retryAfterSeconds, limit: limited.trip.limit };
}

/**
 * A tripped limit where the decision is the answer: the error its transport's filter answers
 * (429 with Retry-After, gRPC RESOURCE_EXHAUSTED with a `retry-after` trailer), its body the
 * 429 body with the policy and the decision id, as the decision's answer would carry them.
 */
export function limitError(verdict: AnsweredVerdict, limited: Limited): AppError {
  const { error, message, ...fields } = limitBody(limited);
  return new AppError(error, message, { ...fields, policy: verdict.decision.policy, decisionId: verdict.id });
}

/**
 * The 202 body of a request a `require_approval` rule holds (docs/approvals.md): the approval
 * to retry with, and in the message where the transport's retry presents it (`presentedIn`:
 * the proxy's `X-Service-Approval` header, MCP's `_meta.approvalId`).
 */
export function approvalBody(verdict: AnsweredVerdict, presentedIn: string): { error: 'approval_required'; approvalId: string; expiresAt: string; message: string; policy: string; reason: string; trace_id: string } {
  const { decision, pending, request } = verdict;
  return {
    error: 'approval_required',
    approvalId: pending!.approvalId,
    expiresAt: pending!.expiresAt,
    message: `Waiting for a person's approval (${decision.policy}: ${decision.reason}); retry with ${presentedIn}: ${pending!.approvalId} once approved`,
    policy: decision.policy,
    reason: decision.reason,
    trace_id: request.traceId,
  };
}
