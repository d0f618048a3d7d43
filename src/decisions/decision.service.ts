import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { Logger } from 'pino';
import { AppConfig } from '../config/app-config';
import { LOGGER } from '../logging/logging.module';
import type { CompiledPolicy } from '../policy-engine/compiled-policy';
import { SlidingWindowLimiter } from '../policy-engine/sliding-window-limiter';
import type { Decision, DecisionInput, EvaluationEnv, Explanation, RateLimiter } from '../policy-engine/types';
import { LoadedPolicies, PolicyRegistry } from '../policies/policy-registry';
import { RedisRateLimiter } from './redis-rate-limiter';

const SWEEP_INTERVAL_MS = 60_000;

/**
 * The one decision service: the proxy, the PDP (gRPC and HTTP) and the adapter endpoints all
 * decide through here, on the same compiled policies and the same rate-limit counters (in
 * process, or in Redis when REDIS_URL is set). Recording the decision is the caller's part.
 */
@Injectable()
export class DecisionService implements OnApplicationShutdown {
  readonly limiter: RateLimiter;
  private readonly redis?: Redis;
  private readonly sweeper?: NodeJS.Timeout;

  constructor(
    private readonly config: AppConfig,
    private readonly registry: PolicyRegistry,
    @Inject(LOGGER) logger: Logger,
  ) {
    if (config.redis.url) {
      this.redis = new Redis(config.redis.url, { maxRetriesPerRequest: 2, enableOfflineQueue: true });
      this.redis.on('error', (error: Error) => logger.warn({ err: error.message }, 'redis rate-limit connection error'));
      this.limiter = new RedisRateLimiter(this.redis);
    } else {
      const local = new SlidingWindowLimiter();
      this.limiter = local;
      this.sweeper = setInterval(() => local.sweep(Date.now()), SWEEP_INTERVAL_MS);
      this.sweeper.unref();
    }
  }

  /** True when denials are enforced; false in MODE=audit (they are only recorded). */
  get enforcing(): boolean {
    return this.config.mode === 'enforce';
  }

  /** The organization's compiled policies; sync once loaded. */
  policies(orgId: string): LoadedPolicies | Promise<LoadedPolicies> {
    return this.registry.get(orgId);
  }

  /** Decides one request; sync unless a Redis rate limit is consulted. */
  decide(policies: LoadedPolicies, input: DecisionInput, applicable?: readonly CompiledPolicy[], nowMs = Date.now()): Decision | Promise<Decision> {
    const env: EvaluationEnv = { limiter: this.limiter, nowMs };
    return policies.set.evaluate(input, env, applicable);
  }

  /** Dry run with the trace of every rule tried; rate limits are peeked, not counted. */
  explain(policies: LoadedPolicies, input: DecisionInput, nowMs = Date.now()): Explanation | Promise<Explanation> {
    return policies.set.explain(input, { limiter: this.limiter, nowMs });
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.redis?.disconnect();
  }
}
