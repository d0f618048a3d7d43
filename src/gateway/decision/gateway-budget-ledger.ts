import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { Logger } from 'pino';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { REDIS_COMMAND_TIMEOUT_MS } from '../common/redis-command-timeout';
import { AppConfig } from '../../core/config/app-config';
import { SETTLE_WITHIN_MS } from '../../core/decision/decision-memory';
import { LOGGER } from '../../core/logging/logging.module';
import { InMemoryBudgetLedger } from '../../core/policy-engine/budget-ledger';
import type { BudgetAnswer, BudgetHold, BudgetLeaseAnswer, BudgetLeasing, BudgetLedger } from '../../core/policy-engine/types';
import { RedisBudgetLedger } from './redis-budget-ledger';

/** Shortest time between two warnings of failing budget totals. */
const WARN_INTERVAL_MS = 60_000;

/**
 * The gateway's totals behind `budget(...)`: in Redis when REDIS_URL is set, so every instance
 * reserves against the same total, else in this process. A total Redis cannot reach refuses the
 * call (503), as rate limits do: a budget that cannot be checked is not spent blindly.
 */
@Injectable()
export class GatewayBudgetLedger implements BudgetLedger, BudgetLeasing, OnApplicationShutdown {
  private readonly ledger: BudgetLedger & BudgetLeasing;
  private readonly redis?: Redis;
  private lastWarnedAt = -Infinity;

  constructor(
    config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    if (!config.redis.url) {
      this.ledger = new InMemoryBudgetLedger({ settleWithinMs: SETTLE_WITHIN_MS });
      return;
    }
    this.redis = new Redis(config.redis.url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, commandTimeout: REDIS_COMMAND_TIMEOUT_MS });
    this.redis.on('error', (error: Error) => logger.warn({ err: error.message }, 'redis budget connection error'));
    this.ledger = new RedisBudgetLedger(this.redis);
  }

  reserve(key: string, cost: number, limit: number, windowMs: number, nowMs: number): BudgetAnswer | Promise<BudgetAnswer> {
    return this.unavailableOnFailure(this.ledger.reserve(key, cost, limit, windowMs, nowMs));
  }

  peek(key: string, cost: number, limit: number, windowMs: number, nowMs: number): BudgetAnswer | Promise<BudgetAnswer> {
    return this.unavailableOnFailure(this.ledger.peek(key, cost, limit, windowMs, nowMs));
  }

  lease(key: string, owner: string, least: number, want: number, limit: number, windowMs: number, leaseMs: number, nowMs: number): BudgetLeaseAnswer | Promise<BudgetLeaseAnswer> {
    return this.unavailableOnFailure(this.ledger.lease(key, owner, least, want, limit, windowMs, leaseMs, nowMs));
  }

  settle(hold: BudgetHold, actualCost: number, nowMs: number): boolean | Promise<boolean> {
    return this.ledger.settle(hold, actualCost, nowMs);
  }

  private unavailableOnFailure<T>(answer: T | Promise<T>): T | Promise<T> {
    if (!(answer instanceof Promise)) return answer;
    return answer.catch((error: unknown) => {
      const now = Date.now();
      if (now - this.lastWarnedAt >= WARN_INTERVAL_MS) {
        this.lastWarnedAt = now;
        this.logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'budget totals in Redis (REDIS_URL) are failing: decisions under budget rules answer 503');
      }
      throw new AppError(ErrorCode.ServiceUnavailable, 'The budget totals (REDIS_URL) are unavailable; try again shortly');
    });
  }

  onApplicationShutdown(): void {
    this.redis?.disconnect();
  }
}
