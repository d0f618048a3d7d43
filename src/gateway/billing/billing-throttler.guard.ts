import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, ThrottlerLimitDetail } from '@nestjs/throttler';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';

/**
 * The billing throttler (RATE_LIMIT_RPM per client address). Named `default` because the
 * throttler suffixes its headers with any other name (`Retry-After-billing`).
 */
export const BILLING_THROTTLER = 'default';

/**
 * RATE_LIMIT_RPM for the billing endpoints: one budget per client address that all of them
 * share, answered with the 429 body of docs/proxy.md "Answers" (docs/billing.md).
 */
@Injectable()
export class BillingThrottlerGuard extends ThrottlerGuard {
  protected override generateKey(_context: ExecutionContext, tracker: string): string {
    return `billing:${tracker}`;
  }

  protected override async throwThrottlingException(_context: ExecutionContext, detail: ThrottlerLimitDetail): Promise<void> {
    const limit = `${detail.limit}/${Math.round(detail.ttl / 60_000)}m per client address`;
    throw new AppError(ErrorCode.RateLimited, `Too Many Requests: the billing endpoints allow ${limit}`, {
      retry_after: detail.timeToBlockExpire,
      limit,
    });
  }
}
