import type { CheckResult } from './transport';

/** A policy denied the call (thrown when throwOnDenied is true). */
export class PolicyDeniedError extends Error {
  override readonly name = 'PolicyDeniedError';
  constructor(readonly result: CheckResult) {
    super(`denied by ${result.policy}${result.rule ? ` (${result.rule})` : ''}: ${result.reason}`);
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
  ) {
    super(`${code}: ${message}`);
  }
}
