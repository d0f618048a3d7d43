import type { AlertsConfig } from '../../core/config/app-config';
import type { Alert } from './alert';
import { AlertHttpClient } from './alert-http';
import { AlertProvider, AlertSendError } from './alert-provider';
import { AlertRateCounter, LocalAlertRateCounter, RedisAlertRateCounter } from './alert-rate-counter';
import { ChatProvider } from './chat-provider';
import { ApiEmailProvider, SmtpEmailProvider } from './email-provider';
import { DelayedRetries, RetrySchedule, Retryable } from './retry-schedule';
import { DropWarnings } from './drop-warnings';
import { WebhookProvider } from './webhook-provider';

/** Where delivery reports: the gateway's logger or the CLI. */
export type DeliveryLog = (level: 'warn' | 'error', message: string, fields: Record<string, unknown>) => void;

export interface RetryPolicy {
  /** Attempts per alert and provider, the first included. */
  attempts: number;
  /** Wait before the second attempt; doubled before each next one. */
  firstDelayMs: number;
}

/** Four attempts over about 3.5 s: 0.5, 1 and 2 s apart. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, firstDelayMs: 500 };

/**
 * Most deliveries under way at once to one provider; beyond, that provider's new alerts are
 * dropped (a receiver that cannot keep up must not exhaust memory). Per provider, so one hung
 * receiver does not cost the healthy ones their alerts.
 */
export const MAX_IN_FLIGHT_PER_PROVIDER = 10_000;

/** Longest one delivery waits in all on a receiver that answers 429; past it, a 429 counts as a failed attempt. */
export const MAX_THROTTLED_MS = 5 * 60_000;
/** Longest single wait a Retry-After gets. */
const MAX_RETRY_AFTER_MS = 60_000;

/** Why alerts were dropped: ALERT_RATE_LIMIT, or too many deliveries under way to one provider. */
export type DropReason = 'rate_limit' | 'overflow';

/** What delivery has done since start, per provider (the gateway's metrics, docs/observability.md). */
export interface DeliveryCounts {
  providers: Array<{ provider: string; sent: number; failed: number }>;
  dropped: Record<DropReason, number>;
}

/** How one provider fared with one alert. */
export interface DeliveryResult {
  provider: string;
  target: string;
  ok: boolean;
  attempts: number;
  error?: string;
}

/** The providers ALERT_* configures, in the order webhook, chat, email (API before SMTP). */
export function configuredProviders(config: AlertsConfig): AlertProvider[] {
  const origin = { instance: config.instanceName, environment: config.environment };
  const http = new AlertHttpClient();
  const providers: AlertProvider[] = [];
  if (config.webhookUrl) providers.push(new WebhookProvider(config.webhookUrl, config.webhookSecret, origin, http));
  if (config.chatWebhook) providers.push(new ChatProvider(config.chatWebhook, origin, http));
  if (config.email.enabled && config.email.apiKey) providers.push(new ApiEmailProvider(config.email, origin, http));
  else if (config.email.enabled && config.email.smtpHost) providers.push(new SmtpEmailProvider(config.email, origin));
  return providers;
}

/**
 * Sends alerts to every provider, off the decision's path: ALERT_RATE_LIMIT first (excess
 * alerts dropped with a warning), then each provider in the background with retries and
 * exponential backoff; a final failure is logged with the alert id. Waiting retries sit in a
 * RetrySchedule (a timer per backoff level, not per alert).
 */
export class AlertDelivery {
  /** Deliveries under way per provider (indexed as `providers`): being sent or waiting for a retry. */
  private readonly inFlightOf: number[];
  /** Batches between their arrival and the start of their sends (the rate counter may be in Redis). */
  private starting = 0;
  private idleWaiters: Array<() => void> = [];
  private readonly retries: RetrySchedule<Delivery>;
  /** Deliveries waiting for the time a receiver's 429 asked for. */
  private readonly throttled = new DelayedRetries<Delivery>();
  private readonly dropWarnings: DropWarnings;
  /** Every delivery under way: at shutdown, the alerts abandoned are named, not just counted. */
  private readonly deliveries = new Set<Delivery>();
  private closed = false;
  /** Deliveries settled per provider (indexed as `providers`), and alerts dropped. */
  private readonly sentOf: number[];
  private readonly failedOf: number[];
  private readonly dropped: Record<DropReason, number> = { rate_limit: 0, overflow: 0 };

  constructor(
    private readonly providers: readonly AlertProvider[],
    private readonly counter: AlertRateCounter,
    private readonly limit: number,
    private readonly log: DeliveryLog,
    private readonly retry: RetryPolicy = DEFAULT_RETRY,
    private readonly maxInFlightPerProvider = MAX_IN_FLIGHT_PER_PROVIDER,
  ) {
    this.inFlightOf = providers.map(() => 0);
    this.sentOf = providers.map(() => 0);
    this.failedOf = providers.map(() => 0);
    this.dropWarnings = new DropWarnings((message, fields) => log('warn', message, fields));
    this.retries = new RetrySchedule(Array.from({ length: Math.max(0, retry.attempts - 1) }, (_, level) => retry.firstDelayMs * 2 ** level));
  }

  /** The delivery ALERT_* configures; REDIS_URL shares the rate counter. */
  static fromConfig(config: AlertsConfig, redisUrl: string | undefined, log: DeliveryLog): AlertDelivery {
    const counter = redisUrl
      ? new RedisAlertRateCounter(redisUrl, config.ratePerMinute, config.environment, (message) => log('warn', message, {}))
      : new LocalAlertRateCounter(config.ratePerMinute);
    return new AlertDelivery(configuredProviders(config), counter, config.ratePerMinute, log);
  }

  get providerList(): readonly AlertProvider[] {
    return this.providers;
  }

  /**
   * Rate-limits the alerts, each organization against its own ALERT_RATE_LIMIT, and starts
   * sending those allowed; resolves once they are under way. Approval notifications are never
   * dropped for the limit: they are how a person learns a request waits (docs/approvals.md).
   */
  async deliver(alerts: readonly Alert[]): Promise<void> {
    if (this.providers.length === 0 || alerts.length === 0) return;
    this.starting++;
    const sent: Alert[] = [];
    try {
      for (const [orgKey, ofOrg] of byOrganization(alerts)) {
        const allowed = orgKey === EXEMPT ? ofOrg.length : await this.counter.take(orgKey, ofOrg.length, Date.now());
        if (allowed < ofOrg.length) this.drop(ofOrg.slice(allowed), 'rate_limit', `alert rate limit reached (ALERT_RATE_LIMIT=${this.limit} per minute and organization): alerts dropped`);
        for (let index = 0; index < allowed; index++) sent.push(ofOrg[index]);
      }
    } finally {
      this.starting--;
    }
    for (let slot = 0; slot < this.providers.length; slot++) this.startAll(slot, sent, sent.length);
    this.notifyIfIdle();
  }

  /** Starts the first `count` alerts on the provider at `slot`, as far as its in-flight cap allows. */
  private startAll(slot: number, alerts: readonly Alert[], count: number): void {
    const provider = this.providers[slot];
    let overflow: Alert[] | null = null;
    for (let index = 0; index < count; index++) {
      if (this.inFlightOf[slot] >= this.maxInFlightPerProvider) (overflow ??= []).push(alerts[index]);
      else this.start(new Delivery(this, provider, slot, alerts[index], null));
    }
    // One line per batch, not per alert: a receiver that cannot keep up must not flood the log too.
    if (overflow !== null) this.drop(overflow, 'overflow', `more than ${this.maxInFlightPerProvider} alert deliveries under way to the ${provider.name} provider: alerts to it dropped`, provider.name);
  }

  /** Deliveries sent and failed for good per provider, and alerts dropped, since start. */
  counts(): DeliveryCounts {
    return {
      providers: this.providers.map((provider, slot) => ({ provider: provider.name, sent: this.sentOf[slot], failed: this.failedOf[slot] })),
      dropped: { ...this.dropped },
    };
  }

  /** Deliveries (one alert to one provider) not yet settled, retries included; alerts of batches still being counted against the rate limit are not among them. */
  underWay(): number {
    return this.deliveries.size;
  }

  /** The ids of the alerts of the first `most` deliveries under way (an alert sent to two providers is named once). */
  underWayAlertIds(most = 20): string[] {
    const ids = new Set<string>();
    for (const delivery of this.deliveries) {
      if (ids.size >= most) break;
      ids.add(delivery.alert.id);
    }
    return [...ids];
  }

  /** Resolves once nothing is being sent (retries included). */
  idle(): Promise<void> {
    if (this.underWay() === 0 && this.starting === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Sends one alert to every provider now (no rate limit) and reports each result: `ags alerts test`. */
  sendNow(alert: Alert): Promise<DeliveryResult[]> {
    return Promise.all(this.providers.map((provider, slot) => new Promise<DeliveryResult>((resolve) => this.start(new Delivery(this, provider, slot, alert, resolve)))));
  }

  /** Warns at once of the drops not yet told (DropWarnings): the process is about to stop. */
  flushWarnings(): void {
    this.dropWarnings.flush();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.flushWarnings();
    this.retries.clear();
    this.throttled.clear();
    await Promise.all([this.counter.close(), ...this.providers.map((provider) => provider.close())]);
  }

  /** A delivery's first attempt. */
  private start(delivery: Delivery): void {
    this.inFlightOf[delivery.slot]++;
    this.deliveries.add(delivery);
    delivery.attempt();
  }

  /** Called by a delivery when an attempt failed: retried after its backoff, or given up and logged. */
  attemptFailed(delivery: Delivery, error: Error): void {
    // Closing ends what is in flight: nothing is retried after it.
    if (this.closed) return this.finished(delivery, error.message);
    if (this.waitIfThrottled(delivery, error)) return;
    const { provider, alert, attempts } = delivery;
    const fields = { alertId: alert.id, trigger: alert.trigger, provider: provider.name, attempt: attempts, err: error.message };
    if (attempts < this.retry.attempts) {
      this.log('warn', 'alert delivery attempt failed; retrying', fields);
      this.retries.schedule(delivery, attempts - 1);
      return;
    }
    this.log('error', `alert delivery failed after ${attempts} attempts`, fields);
    this.finished(delivery, error.message);
  }

  /**
   * A 429 is the receiver asking to slow down (email APIs and chat services rate-limit: Resend
   * takes 2 requests a second by default), not failing: the delivery waits as asked (Retry-After,
   * else a backoff doubling from the first) and the attempt does not count, for up to MAX_THROTTLED_MS in all.
   * Counted as failures, four attempts over 3.5 s lost every alert of a burst beyond what the
   * receiver took in that time.
   */
  private waitIfThrottled(delivery: Delivery, error: Error): boolean {
    if (!(error instanceof AlertSendError) || error.status !== 429) return false;
    // Without Retry-After, the waits double (0.5, 1, 2 s...): at a steady 0.5 s a throttled receiver was asked 600 times in the 5 minutes.
    const backoffMs = this.retry.firstDelayMs * 2 ** delivery.throttles;
    const waitMs = Math.min(Math.max(error.retryAfterMs ?? backoffMs, this.retry.firstDelayMs), MAX_RETRY_AFTER_MS);
    if (delivery.throttledMs + waitMs > MAX_THROTTLED_MS) return false;
    delivery.throttledMs += waitMs;
    delivery.throttles++;
    delivery.attempts--;
    const { provider, alert } = delivery;
    this.log('warn', 'alert receiver asked to slow down (429); waiting', { alertId: alert.id, trigger: alert.trigger, provider: provider.name, waitMs });
    this.throttled.schedule(delivery, waitMs);
    return true;
  }

  /** Called by a delivery once it is over: sent, or failed for good (`error`). */
  finished(delivery: Delivery, error: string | null): void {
    this.inFlightOf[delivery.slot]--;
    if (error === null) this.sentOf[delivery.slot]++;
    else this.failedOf[delivery.slot]++;
    this.deliveries.delete(delivery);
    delivery.report?.({ provider: delivery.provider.name, target: delivery.provider.target, ok: error === null, attempts: delivery.attempts, ...(error === null ? {} : { error }) });
    this.notifyIfIdle();
  }

  private notifyIfIdle(): void {
    if (this.idleWaiters.length === 0 || this.starting > 0 || this.underWay() > 0) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private drop(alerts: readonly Alert[], reason: DropReason, message: string, provider?: string): void {
    this.dropped[reason] += alerts.length;
    this.dropWarnings.add(alerts, message, provider);
  }
}

/** One alert on its way to one provider: it counts its attempts and tells its owner how each went. */
class Delivery implements Retryable {
  attempts = 0;
  dueAt = 0;
  /** Time spent waiting on 429 answers, and how many there were. */
  throttledMs = 0;
  throttles = 0;

  constructor(
    private readonly owner: AlertDelivery,
    readonly provider: AlertProvider,
    /** The provider's index in the owner's list. */
    readonly slot: number,
    readonly alert: Alert,
    /** Who wants the result (`ags alerts test`); null in the background. */
    readonly report: ((result: DeliveryResult) => void) | null,
  ) {}

  attempt(): void {
    this.attempts++;
    this.provider.send(this.alert).then(
      () => this.owner.finished(this, null),
      (error: unknown) => this.owner.attemptFailed(this, error instanceof Error ? error : new Error(String(error))),
    );
  }

  retry(): void {
    this.attempt();
  }
}

/** The key of the alerts ALERT_RATE_LIMIT never drops (approval notifications). */
const EXEMPT = '';
/** The rate-limit key of alerts no organization owns (failures before any decision). */
const NO_ORGANIZATION = '-';

/** The alerts of a batch by rate-limit key, in their order: the organization's id, NO_ORGANIZATION, or EXEMPT. */
function byOrganization(alerts: readonly Alert[]): Map<string, Alert[]> {
  const groups = new Map<string, Alert[]>();
  for (const alert of alerts) {
    const key = alert.trigger === 'approval' ? EXEMPT : (alert.orgId ?? NO_ORGANIZATION);
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [alert]);
    else group.push(alert);
  }
  return groups;
}
