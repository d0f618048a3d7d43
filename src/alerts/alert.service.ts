import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Logger } from 'pino';
import { AppConfig } from '../config/app-config';
import { DecisionEvent, DecisionEvents } from '../decisions/decision-events';
import { LOGGER } from '../logging/logging.module';
import { AlertDispatcher } from './alert-dispatcher';
import { ActiveTriggers, activeTriggers, RAISED_FIELDS, raiseAlerts } from './alert-triggers';

/** Alerts raised within this many milliseconds go to the worker in one message. */
const BATCH_MS = 10;
/** At shutdown, the longest the worker may spend finishing its deliveries (first attempts and retries). */
const DRAIN_MS = 5000;

/**
 * Alerting on every governed decision, whatever its entry point: listens to DecisionEvents,
 * picks the decisions ALERT_ON (and `alert` rules) care about and hands their facts, in small
 * batches, to the alert worker, which builds the alerts, rate-limits and delivers them. The
 * listener only queues: it never waits for, nor fails with, a delivery.
 */
@Injectable()
export class AlertService implements OnModuleInit, OnApplicationShutdown {
  private readonly triggers: ActiveTriggers;
  private readonly dispatcher: AlertDispatcher;
  /** Alerts raised since the last batch, as raiseAlerts lays them out. */
  private pending: unknown[] = [];
  private flushTimer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly events: DecisionEvents,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.triggers = activeTriggers(config.alerts.on);
    this.dispatcher = new AlertDispatcher({ config: config.alerts, redisUrl: config.redis.url }, logger);
  }

  /** True when at least one provider is configured: without one there is nothing to alert. */
  get enabled(): boolean {
    const alerts = this.config.alerts;
    return alerts.webhookUrl !== undefined || alerts.chatWebhook !== undefined || alerts.email.enabled;
  }

  onModuleInit(): void {
    if (!this.enabled) {
      // An operator who set ALERT_ON expects alerts: say at start that none can be sent, rather than stay silent.
      if (this.triggers.size > 0) {
        this.logger.warn(
          { triggers: [...this.triggers] },
          'ALERT_ON is set but no alert provider is configured (ALERT_WEBHOOK_URL, ALERT_CHAT_WEBHOOK or ALERT_EMAIL_ENABLED=true): no alert will be sent',
        );
      }
      return;
    }
    this.unsubscribe = this.events.subscribe((event) => this.onDecision(event));
    this.logger.info({ triggers: [...this.triggers], ratePerMinute: this.config.alerts.ratePerMinute }, 'alerting on');
  }

  /** Queues the alerts of one decision. */
  onDecision(event: DecisionEvent): void {
    if (raiseAlerts(event, this.triggers, this.pending) === 0) return;
    this.flushTimer ??= setTimeout(() => this.flush(), BATCH_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    this.unsubscribe?.();
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flush();
    await this.dispatcher.close(DRAIN_MS);
  }

  private flush(): void {
    this.flushTimer = null;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    try {
      this.dispatcher.dispatch(batch);
    } catch (error) {
      this.logger.error({ err: error, alerts: batch.length / RAISED_FIELDS }, 'alerts could not be handed to the alert worker');
    }
  }
}
