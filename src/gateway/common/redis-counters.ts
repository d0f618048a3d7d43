import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';

/**
 * The answer to a request whose count Redis could not make (a policy's `rate_limit`, the billing
 * throttle): the limit cannot be checked, so the request is not let through, and a 503 is what
 * clients retry, as when the database is unreachable.
 */
export function redisCountersUnavailable(): AppError {
  return new AppError(ErrorCode.ServiceUnavailable, 'The rate-limit counters (REDIS_URL) are unavailable; try again shortly');
}
