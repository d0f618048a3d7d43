import type { AlertsConfig } from '../config/app-config';
import type { Alert } from './alert';
import { AlertHttpClient } from './alert-http';
import type { AlertProvider } from './alert-provider';
import { AlertRateCounter, LocalAlertRateCounter, RedisAlertRateCounter } from './alert-rate-counter';
import { ChatProvider } from './chat-provider';
import { ApiEmailProvider, SmtpEmailProvider } from './email-provider';
import { WebhookProvider } from './webhook-provider';

/** Where delivery reports: the gateway's logger (through the worker's messages) or the CLI. */
export type DeliveryLog = (level: 'warn' | 'error', message: string, fields: Record<string, unknown>) => void;

export interface RetryPolicy {
  /** Attempts per alert and provider, the first included. */
  attempts: number;
  /** Wait before the second attempt; doubled before each next one. */
  firstDelayMs: number;
}

/** Four attempts over about 3.5 s: 0.5, 1 and 2 s apart. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, firstDelayMs: 500 };

/** Most deliveries under way at once; beyond, new alerts are dropped (a receiver that cannot keep up must not exhaust memory). */
const MAX_IN_FLIGHT = 10_000;

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
 * exponential backoff; a final failure is logged with the alert id.
 */
export class AlertDelivery {
  private inFlight = 0;
  /** Batches between their arrival and the start of their sends (the rate counter may be in Redis). */
  private starting = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly providers: readonly AlertProvider[],
    private readonly counter: AlertRateCounter,
    private readonly limit: number,
    private readonly log: DeliveryLog,
    private readonly retry: RetryPolicy = DEFAULT_RETRY,
  ) {}

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

  /** Rate-limits the alerts and starts sending those allowed; resolves once they are under way. */
  async deliver(alerts: readonly Alert[]): Promise<void> {
    if (this.providers.length === 0 || alerts.length === 0) return;
    this.starting++;
    let allowed: number;
    try {
      allowed = await this.counter.take(alerts.length, Date.now());
    } finally {
      this.starting--;
    }
    if (allowed < alerts.length) this.drop(alerts.slice(allowed), `alert rate limit reached (ALERT_RATE_LIMIT=${this.limit} per minute): alerts dropped`);
    const overflow: Alert[] = [];
    for (const alert of alerts.slice(0, allowed)) {
      if (this.inFlight >= MAX_IN_FLIGHT) overflow.push(alert);
      else for (const provider of this.providers) void this.sendWithRetries(provider, alert);
    }
    // One line per batch, not per alert: a receiver that cannot keep up must not flood the log too.
    if (overflow.length > 0) this.drop(overflow, `more than ${MAX_IN_FLIGHT} alert deliveries under way: alerts dropped`);
    this.notifyIfIdle();
  }

  /** Resolves once nothing is being sent (retries included). */
  idle(): Promise<void> {
    if (this.inFlight === 0 && this.starting === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Sends one alert to every provider now (no rate limit) and reports each result: `ags alerts test`. */
  sendNow(alert: Alert): Promise<DeliveryResult[]> {
    return Promise.all(this.providers.map((provider) => this.sendWithRetries(provider, alert)));
  }

  async close(): Promise<void> {
    await Promise.all([this.counter.close(), ...this.providers.map((provider) => provider.close())]);
  }

  private async sendWithRetries(provider: AlertProvider, alert: Alert): Promise<DeliveryResult> {
    this.inFlight++;
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          await provider.send(alert);
          return { provider: provider.name, target: provider.target, ok: true, attempts: attempt };
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          const fields = { alertId: alert.id, trigger: alert.trigger, provider: provider.name, attempt, err: message };
          if (attempt >= this.retry.attempts) {
            this.log('error', `alert delivery failed after ${attempt} attempts`, fields);
            return { provider: provider.name, target: provider.target, ok: false, attempts: attempt, error: message };
          }
          this.log('warn', 'alert delivery attempt failed; retrying', fields);
          await sleep(this.retry.firstDelayMs * 2 ** (attempt - 1));
        }
      }
    } finally {
      this.inFlight--;
      this.notifyIfIdle();
    }
  }

  private notifyIfIdle(): void {
    if (this.inFlight > 0 || this.starting > 0 || this.idleWaiters.length === 0) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private drop(alerts: readonly Alert[], message: string): void {
    this.log('warn', message, { dropped: alerts.length, alertIds: alerts.slice(0, 20).map((alert) => alert.id), triggers: [...new Set(alerts.map((alert) => alert.trigger))] });
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
