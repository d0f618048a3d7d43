import { createHmac } from 'node:crypto';
import type { Alert, AlertOrigin } from './alert';
import { AlertHttpClient, headerLines, safeUrl } from './alert-http';
import type { AlertProvider } from './alert-provider';

/** Headers of the generic webhook (SPEC.md "Webhook request headers", plus the replay-proof pair). */
export enum AlertHeader {
  Event = 'X-Service-Event',
  Trigger = 'X-Service-Trigger',
  /** `sha256=<hex>`: HMAC-SHA256 of the raw body (SPEC.md). */
  Signature = 'X-Service-Signature',
  /** Unix seconds when the request was signed. */
  Timestamp = 'X-Service-Timestamp',
  /** `sha256=<hex>`: HMAC-SHA256 of `<timestamp>.<raw body>`, so a receiver can refuse old or replayed requests. */
  SignatureV2 = 'X-Service-Signature-V2',
}

/** SPEC.md's webhook payload, as the JSON text that is sent and signed. */
export function webhookBody(alert: Alert, origin: AlertOrigin): string {
  return JSON.stringify({
    event: 'service.alert',
    version: '1.0',
    id: alert.id,
    timestamp: alert.timestamp,
    severity: alert.severity,
    trigger: alert.trigger,
    title: alert.title,
    message: alert.message,
    entry: alert.entry,
    instance: origin.instance,
    environment: origin.environment,
  });
}

/** The request headers for `body`; signatures only with a secret. */
export function webhookHeaders(alert: Alert, body: string, secret: string | undefined, nowSeconds: number): Record<string, string> {
  const timestamp = String(nowSeconds);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'Service/1.0',
    [AlertHeader.Event]: 'alert',
    [AlertHeader.Trigger]: alert.trigger,
    [AlertHeader.Timestamp]: timestamp,
  };
  if (secret === undefined) return headers;
  headers[AlertHeader.Signature] = `sha256=${hmacHex(secret, body)}`;
  headers[AlertHeader.SignatureV2] = `sha256=${hmacHex(secret, `${timestamp}.${body}`)}`;
  return headers;
}

function hmacHex(secret: string, text: string): string {
  return createHmac('sha256', secret).update(text).digest('hex');
}

/** The generic webhook: SPEC.md's JSON payload, signed when ALERT_WEBHOOK_SECRET is set. */
export class WebhookProvider implements AlertProvider {
  readonly name = 'webhook';
  readonly target: string;
  private readonly parsed: URL;

  constructor(
    private readonly url: string,
    private readonly secret: string | undefined,
    private readonly origin: AlertOrigin,
    private readonly http: AlertHttpClient,
  ) {
    this.target = `${safeUrl(url)} (${secret === undefined ? 'unsigned' : 'signed'})`;
    this.parsed = new URL(url);
  }

  send(alert: Alert): Promise<void> {
    const body = webhookBody(alert, this.origin);
    return this.http.post(this.parsed, headerLines(webhookHeaders(alert, body, this.secret, Math.floor(Date.now() / 1000))), body);
  }

  async close(): Promise<void> {
    this.http.close();
  }
}
