import { createHmac, createSecretKey, KeyObject } from 'node:crypto';
import type { Alert, AlertOrigin } from './alert';
import { jsonString, needsEscape } from '../../core/common/json-text';
import { AlertHttpClient, safeUrl } from './alert-http';
import type { AlertProvider } from './alert-provider';

/** Headers of the generic webhook (docs/alerts.md "The generic webhook", the replay-proof pair included). */
export enum AlertHeader {
  Event = 'X-Service-Event',
  Trigger = 'X-Service-Trigger',
  /** `sha256=<hex>`: HMAC-SHA256 of the raw body (docs/alerts.md "The generic webhook"). */
  Signature = 'X-Service-Signature',
  /** Unix seconds when the request was signed. */
  Timestamp = 'X-Service-Timestamp',
  /** `sha256=<hex>`: HMAC-SHA256 of `<timestamp>.<raw body>`, so a receiver can refuse old or replayed requests. */
  SignatureV2 = 'X-Service-Signature-V2',
}

/**
 * The webhook payload (docs/alerts.md "The generic webhook") as the JSON text that is sent and signed: exactly what
 * JSON.stringify gives for the payload object (webhook-provider.spec.ts compares them), written
 * from its parts, the constant ones rendered once. An alert per denial makes this the hot path
 * of alerting; JSON.stringify of the object cost about twice as much.
 */
export class WebhookBody {
  private readonly tail: string;

  constructor(origin: AlertOrigin) {
    this.tail = `,"instance":${JSON.stringify(origin.instance)},"environment":${JSON.stringify(origin.environment)}}`;
  }

  render(alert: Alert): string {
    const entry = alert.entry;
    // Nearly always no value needs escaping: then one test over them all (and each is quoted as it is) instead of one per value.
    const values =
      alert.id + alert.timestamp + alert.severity + alert.trigger + alert.title + alert.message + entry.traceId + entry.agentId + entry.agentName +
      entry.trustTier + entry.action + entry.method + entry.path + entry.decision + entry.policyName + entry.reason;
    const json = needsEscape(values) ? jsonString : quoted;
    return (
      `{"event":"service.alert","version":"1.0","id":${json(alert.id)},"timestamp":${json(alert.timestamp)},` +
      `"severity":${json(alert.severity)},"trigger":${json(alert.trigger)},"title":${json(alert.title)},"message":${json(alert.message)},` +
      `"entry":{"traceId":${json(entry.traceId)},"agentId":${json(entry.agentId)},"agentName":${json(entry.agentName)},` +
      `"trustTier":${json(entry.trustTier)},"action":${json(entry.action)},"method":${json(entry.method)},"path":${json(entry.path)},` +
      `"decision":${json(entry.decision)},"policyName":${json(entry.policyName)},"reason":${json(entry.reason)}}` +
      this.tail
    );
  }
}

/** A string that needs no escaping, as JSON. */
function quoted(text: string): string {
  return `"${text}"`;
}

/** The webhook payload, as the JSON text that is sent and signed. */
export function webhookBody(alert: Alert, origin: AlertOrigin): string {
  return new WebhookBody(origin).render(alert);
}

/** The request headers for `body`; signatures only with a secret. */
export function webhookHeaders(alert: Alert, body: string, secret: string | KeyObject | undefined, nowSeconds: number): Record<string, string> {
  const timestamp = String(nowSeconds);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'Service/1.0',
    [AlertHeader.Event]: 'alert',
    [AlertHeader.Trigger]: alert.trigger,
    [AlertHeader.Timestamp]: timestamp,
  };
  if (secret === undefined) return headers;
  headers[AlertHeader.Signature] = signature(secret, body);
  headers[AlertHeader.SignatureV2] = signature(secret, body, `${timestamp}.`);
  return headers;
}

/** `sha256=<hex>`: HMAC-SHA256 of `prefix` and `text`, both UTF-8. */
function signature(secret: string | KeyObject, text: string, prefix = ''): string {
  return `sha256=${createHmac('sha256', secret).update(prefix).update(text).digest('hex')}`;
}

/** The generic webhook (docs/alerts.md "The generic webhook"), signed when ALERT_WEBHOOK_SECRET is set. */
export class WebhookProvider implements AlertProvider {
  readonly name = 'webhook';
  readonly target: string;
  private readonly parsed: URL;
  private readonly body: WebhookBody;
  /** The secret as a key object, made once: a string key is converted again at every signature. */
  private readonly key: KeyObject | undefined;

  constructor(
    url: string,
    secret: string | undefined,
    origin: AlertOrigin,
    private readonly http: AlertHttpClient,
  ) {
    this.target = `${safeUrl(url)} (${secret === undefined ? 'unsigned' : 'signed'})`;
    this.parsed = new URL(url);
    this.body = new WebhookBody(origin);
    this.key = secret === undefined ? undefined : createSecretKey(Buffer.from(secret));
  }

  async send(alert: Alert): Promise<void> {
    const body = this.body.render(alert);
    await this.http.post(this.parsed, webhookHeaders(alert, body, this.key, Math.floor(Date.now() / 1000)), body);
  }

  async close(): Promise<void> {
    await this.http.close();
  }
}
