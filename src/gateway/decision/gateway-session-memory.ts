import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { Logger } from 'pino';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { REDIS_COMMAND_TIMEOUT_MS } from '../common/redis-command-timeout';
import { AppConfig } from '../../core/config/app-config';
import type { SessionMemory } from '../../core/decision/decision-sources';
import { SessionKey, SessionStore } from '../../core/decision/session-store';
import { LOGGER } from '../../core/logging/logging.module';
import type { LabelGrant, SessionFacts } from '../../core/policy-engine/types';
import { RedisSessionStore } from './redis-session-store';

/** Shortest time between two warnings of a failing session memory. */
const WARN_INTERVAL_MS = 60_000;

/**
 * The gateway's session memory (docs/policies.md "Bounds"): in Redis when REDIS_URL is set, so
 * behind a load balancer an agent cannot shed a label by landing on another instance, else in
 * this process. A session Redis cannot read or write refuses the call (503), as rate limits and
 * budgets do: a label that cannot be read or kept is not skipped.
 */
@Injectable()
export class GatewaySessionMemory implements SessionMemory, OnApplicationShutdown {
  private readonly local?: SessionStore;
  private readonly shared?: RedisSessionStore;
  private readonly redis?: Redis;
  private lastWarnedAt = -Infinity;

  constructor(
    config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    if (!config.redis.url) {
      this.local = new SessionStore();
      return;
    }
    this.redis = new Redis(config.redis.url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, commandTimeout: REDIS_COMMAND_TIMEOUT_MS });
    this.redis.on('error', (error: Error) => logger.warn({ err: error.message }, 'redis session connection error'));
    this.shared = new RedisSessionStore(this.redis);
  }

  recall(key: SessionKey, nowMs: number): SessionFacts | Promise<SessionFacts> {
    return this.local?.recall(key, nowMs) ?? this.unavailableOnFailure(this.shared!.recall(key));
  }

  remember(key: SessionKey, action: string, grants: readonly LabelGrant[] | undefined, nowMs: number): string[] | Promise<string[]> {
    return this.local?.remember(key, action, grants, nowMs) ?? this.unavailableOnFailure(this.shared!.remember(key, action, grants));
  }

  clearLabels(orgId: string, agentId: string, sessionId: string | undefined, nowMs: number): boolean | Promise<boolean> {
    return this.local?.clearLabels(orgId, agentId, sessionId, nowMs) ?? this.unavailableOnFailure(this.shared!.clearLabels(orgId, agentId, sessionId));
  }

  private unavailableOnFailure<T>(answer: Promise<T>): Promise<T> {
    return answer.catch((error: unknown) => {
      const now = Date.now();
      if (now - this.lastWarnedAt >= WARN_INTERVAL_MS) {
        this.lastWarnedAt = now;
        this.logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'sessions in Redis (REDIS_URL) are failing: decisions under session-reading policies answer 503');
      }
      throw new AppError(ErrorCode.ServiceUnavailable, 'The session memory (REDIS_URL) is unavailable; try again shortly');
    });
  }

  onApplicationShutdown(): void {
    this.redis?.disconnect();
  }
}
