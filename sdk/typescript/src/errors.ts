import type { CheckResult } from './transport';

/** A policy denied the call (thrown when throwOnDenied is true). */
export class PolicyDeniedError extends Error {
  override readonly name: string = 'PolicyDeniedError';
  constructor(readonly result: CheckResult) {
    super(`denied by ${result.policy}${result.rule ? ` (${result.rule})` : ''}: ${result.reason}`);
  }
}

/**
 * check() with throwOnDenied: a `require_approval` rule holds the call until a person decides
 * (docs/approvals.md). A PolicyDeniedError, so code that stops on a denial stops here too; the
 * approval to wait for and retry with is `approvalId` (the result's `approvalId` and
 * `approvalExpiresAt` are the same). guard() waits for it instead of throwing this.
 */
export class ApprovalPendingError extends PolicyDeniedError {
  override readonly name = 'ApprovalPendingError';
  /** The approval the gateway opened for the call. */
  readonly approvalId: string;
  /** When it expires (ISO 8601). */
  readonly expiresAt: string;
  constructor(result: CheckResult) {
    super(result);
    this.approvalId = result.approvalId;
    this.expiresAt = result.approvalExpiresAt;
    this.message = `approval ${result.approvalId} required by ${result.policy}: ${result.reason}`;
  }
}

/** The gateway did not answer within the call's timeout. */
export class GatewayTimeoutError extends Error {
  override readonly name = 'GatewayTimeoutError';
}

/** The gateway could not be reached over gRPC nor HTTP, or could not decide (fail-closed). */
export class GatewayUnavailableError extends Error {
  override readonly name = 'GatewayUnavailableError';
  constructor(
    message: string,
    /** True when the transport could not connect at all (gRPC UNAVAILABLE): the cue for the HTTP fallback. */
    readonly cannotConnect = false,
  ) {
    super(message);
  }
}

export type RejectionCode = 'unauthenticated' | 'invalid_argument' | 'not_found' | 'permission_denied' | 'resource_exhausted';

/**
 * The gateway refused the question itself: bad credentials (unauthenticated), a malformed
 * request (invalid_argument), an unknown agent (not_found), a revoked agent (permission_denied),
 * a tripped rate limit or used-up quota (resource_exhausted).
 */
export class GatewayRejectedError extends Error {
  override readonly name = 'GatewayRejectedError';
  constructor(
    readonly code: RejectionCode,
    message: string,
    /** For resource_exhausted from a tripped rate limit: seconds until a retry can pass. */
    readonly retryAfterSeconds?: number,
  ) {
    super(`${code}: ${message}`);
  }
}

/** A whole number of seconds from a `retry-after` header or trailer, or from a body's `retry_after`. */
export function retryAfterOf(value: unknown): number | undefined {
  const seconds = typeof value === 'number' ? value : typeof value === 'string' && /^[0-9]+$/.test(value) ? Number(value) : NaN;
  return Number.isSafeInteger(seconds) ? seconds : undefined;
}
