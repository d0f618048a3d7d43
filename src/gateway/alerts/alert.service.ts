import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Logger } from 'pino';
import { AppConfig } from '../../core/config/app-config';
import { DecisionEvent, DecisionEvents, QuotaRefusal } from '../../core/decision/decision-events';
import { RequestFailure, RequestFailures } from '../../core/decision/request-failures';
import { LOGGER } from '../../core/logging/logging.module';
import type { Alert } from './alert';
import { ApprovalLinks } from '../approvals/approval-links';
import { approvalAlert, openedApproval } from './approval-alert';
import { AlertDelivery, DeliveryCounts } from './alert-delivery';
import { ActiveTriggers, activeTriggers, alertsOfBatch, raiseAlerts, raiseFailure, raiseQuotaRefusal } from './alert-triggers';

/** Alerts raised within this many milliseconds are delivered as one batch. */
const BATCH_MS = 10;
/** At shutdown, the longest delivery may take to finish what is under way (first attempts and retries). */
const DRAIN_MS = 5000;
/** An organization out of monthly checks is refused on every request; it is alerted of once in this long (per instance). */
export const QUOTA_ALERT_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Alerting on every governed decision, whatever its entry point: listens to DecisionEvents
 * (and, for the `error` trigger, to RequestFailures: requests failed before any decision),
 * picks the decisions ALERT_ON (and `alert` rules) care about and hands them, in small batches,
 * to AlertDelivery, which builds the alerts, rate-limits and sends them in the background. The
 * listener only queues: it never waits for, nor fails with, a delivery.
 */
@Injectable()
export class AlertService implements OnModuleInit, OnApplicationShutdown {
  private readonly triggers: ActiveTriggers;
  /** Null without a provider: nothing to send, so no rate counter (nor its Redis connection). */
  private readonly delivery: AlertDelivery | null;
  /** Alerts raised since the last batch, as raiseAlerts lays them out. */
  private pending: unknown[] = [];
  private flushTimer: NodeJS.Timeout | null = null;
  private unsubscribe: Array<() => void> = [];
  /** When each organization's quota refusal was last alerted (ms since the epoch). */
  private readonly quotaAlerted = new Map<string, number>();

  constructor(
    private readonly config: AppConfig,
    private readonly events: DecisionEvents,
    private readonly failures: RequestFailures,
    private readonly links: ApprovalLinks,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.triggers = activeTriggers(config.alerts.on);
    this.delivery = this.enabled ? AlertDelivery.fromConfig(config.alerts, config.redis.url, (level, message, fields) => logger[level](fields, message)) : null;
  }

  /** True when at least one provider is configured: without one there is nothing to alert. */
  get enabled(): boolean {
    const alerts = this.config.alerts;
    return alerts.webhookUrl !== undefined || alerts.chatWebhook !== undefined || alerts.email.enabled;
  }

  /**
   * Sends an alert about the gateway's own policy lifecycle (a policy source that fails, a
   * rollout step: docs/policies.md): always, when a provider is configured, whatever ALERT_ON
   * says, as approvals are; rate-limited by ALERT_RATE_LIMIT like every alert.
   */
  notify(alert: Alert): void {
    void this.delivery?.deliver([alert]);
  }

  /** What delivery has done since start (the gateway's metrics); null without a provider. */
  deliveryCounts(): DeliveryCounts | null {
    return this.delivery?.counts() ?? null;
  }

  onModuleInit(): void {
    if (!this.enabled) {
      // Triggers asked for and nowhere to send them: said once, or the missing URL goes unnoticed until an incident.
      if (this.config.alerts.on.length > 0) {
        this.logger.warn({ triggers: this.config.alerts.on }, 'ALERT_ON is set but no alert provider is configured (ALERT_WEBHOOK_URL, ALERT_CHAT_WEBHOOK or ALERT_EMAIL_ENABLED): no alert will be sent');
      }
      return;
    }
    this.unsubscribe.push(this.events.subscribe((event) => this.onDecision(event)));
    if (this.triggers.has('error')) this.unsubscribe.push(this.failures.subscribe((failure) => this.onFailure(failure)));
    if (this.triggers.has('rate_limit')) this.unsubscribe.push(this.events.subscribeQuotaRefusals((refusal) => this.onQuotaRefusal(refusal)));
    this.logger.info({ triggers: [...this.triggers], ratePerMinute: this.config.alerts.ratePerMinute }, 'alerting on');
  }

  /** Queues the alerts of one decision. */
  onDecision(event: DecisionEvent): void {
    const approvalId = openedApproval(event);
    if (approvalId !== undefined) this.notifyApproval(event, approvalId);
    if (raiseAlerts(event, this.triggers, this.pending) === 0) return;
    this.flushSoon();
  }

  /** Sends the notification of a request waiting for a person, with its signed links (docs/approvals.md). */
  private notifyApproval(event: DecisionEvent, approvalId: string): void {
    const expiresAt = new Date(event.entry.ts + (event.decision.approval?.timeoutMs ?? 0)).toISOString();
    Promise.all([this.links.url(approvalId, 'approve', expiresAt), this.links.url(approvalId, 'reject', expiresAt)])
      .then(([approve, reject]) => this.delivery?.deliver([approvalAlert(event, approvalId, { approve, reject })]))
      .catch((error: unknown) => this.logger.error({ err: error, approvalId }, 'approval notification failed'));
  }

  /** Queues the `error` alert of a request the gateway failed before deciding it. */
  onFailure(failure: RequestFailure): void {
    raiseFailure(failure, this.pending);
    this.flushSoon();
  }

  /**
   * Queues the `rate_limit` alert of an organization out of monthly checks, at most once an
   * hour per organization: every one of its requests is refused until the quota resets, and an
   * alert for each would use up ALERT_RATE_LIMIT and crowd out every other alert.
   */
  onQuotaRefusal(refusal: QuotaRefusal): void {
    const last = this.quotaAlerted.get(refusal.orgId);
    if (last !== undefined && refusal.ts - last < QUOTA_ALERT_INTERVAL_MS) return;
    this.quotaAlerted.set(refusal.orgId, refusal.ts);
    raiseQuotaRefusal(refusal, this.pending);
    this.flushSoon();
  }

  async onApplicationShutdown(): Promise<void> {
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe();
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flush();
    await this.drain();
  }

  /** Lets delivery finish what it is sending for up to DRAIN_MS; what is left then is lost, and the log says which. */
  private async drain(): Promise<void> {
    if (this.delivery === null) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.delivery.idle(), new Promise((resolve) => (timer = setTimeout(resolve, DRAIN_MS)))]);
    clearTimeout(timer);
    this.delivery.flushWarnings();
    const left = this.delivery.underWay();
    if (left > 0) this.logger.warn({ deliveries: left, alertIds: this.delivery.underWayAlertIds(), drainMs: DRAIN_MS }, 'alert deliveries abandoned at shutdown');
    await this.delivery.close();
  }

  /** Delivers what is pending within BATCH_MS, with what else is raised meanwhile. */
  private flushSoon(): void {
    this.flushTimer ??= setTimeout(() => this.flush(), BATCH_MS);
  }

  private flush(): void {
    this.flushTimer = null;
    if (this.pending.length === 0 || this.delivery === null) return;
    const alerts = alertsOfBatch(this.pending);
    this.pending = [];
    this.delivery.deliver(alerts).catch((error: unknown) => this.logger.error({ err: error, alertIds: alerts.map((alert) => alert.id) }, 'alert delivery failed'));
  }
}
