import { ErrorCode } from '../common/error-code';
import type { Decision, RateLimitTrip } from '../policy-engine/types';

/** A denial that says "later", not "never": a tripped rate limit or a spent budget (429, Retry-After). */
export interface LimitTrip {
  code: ErrorCode.RateLimited | ErrorCode.BudgetExceeded;
  trip: RateLimitTrip;
  message: string;
}

/** The limit a deny tripped, if it did: every transport answers it as a 429 with `retry_after` and `limit`. */
export function limitTripOf(decision: Decision): LimitTrip | undefined {
  if (decision.rateLimit !== undefined) return { code: ErrorCode.RateLimited, trip: decision.rateLimit, message: `Rate limit exceeded: ${decision.reason}` };
  if (decision.budget !== undefined) return { code: ErrorCode.BudgetExceeded, trip: decision.budget, message: `Budget exceeded: ${decision.reason}` };
  return undefined;
}
