import { createHmac, createSecretKey, KeyObject } from 'node:crypto';
import type { Alert, AlertOrigin } from './alert';
import { jsonString } from '../common/json-text';
import { AlertHttpClient, headerLines, requestLine, safeUrl } from './alert-http';
import type { AlertProvider, AttemptListener } from './alert-provider';

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

// Anything but printable ASCII, CR and LF (conservative: other control characters take the UTF-8 path too).
const NON_ASCII = /[^\x20-\x7e\r\n]/;

/**
 * SPEC.md's webhook payload as the JSON text that is sent and signed: exactly what
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
    return (
      `{"event":"service.alert","version":"1.0","id":${jsonString(alert.id)},"timestamp":${jsonString(alert.timestamp)},` +
      `"severity":${jsonString(alert.severity)},"trigger":${jsonString(alert.trigger)},"title":${jsonString(alert.title)},"message":${jsonString(alert.message)},` +
      `"entry":{"traceId":${jsonString(entry.traceId)},"agentId":${jsonString(entry.agentId)},"agentName":${jsonString(entry.agentName)},` +
      `"trustTier":${jsonString(entry.trustTier)},"action":${jsonString(entry.action)},"method":${jsonString(entry.method)},"path":${jsonString(entry.path)},` +
      `"decision":${jsonString(entry.decision)},"policyName":${jsonString(entry.policyName)},"reason":${jsonString(entry.reason)}}` +
      this.tail
    );
  }
}

/** SPEC.md's webhook payload, as the JSON text that is sent and signed. */
export function webhookBody(alert: Alert, origin: AlertOrigin): string {
  return new WebhookBody(origin).render(alert);
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
  const key = createSecretKey(Buffer.from(secret));
  headers[AlertHeader.Signature] = signature(key, body);
  headers[AlertHeader.SignatureV2] = signature(key, body, `${timestamp}.`);
  return headers;
}

/** `sha256=<hex>`: HMAC-SHA256 of `prefix` and `text` (UTF-8; `ascii` when both are ASCII, so they are hashed without encoding). */
function signature(key: KeyObject, text: string, prefix = '', ascii = false): string {
  const encoding = ascii ? 'latin1' : 'utf8';
  const hmac = createHmac('sha256', key);
  if (prefix !== '') hmac.update(prefix, encoding);
  return `sha256=${hmac.update(text, encoding).digest('hex')}`;
}

/** The generic webhook: SPEC.md's JSON payload, signed when ALERT_WEBHOOK_SECRET is set. */
export class WebhookProvider implements AlertProvider {
  readonly name = 'webhook';
  readonly target: string;
  private readonly parsed: URL;
  private readonly body: WebhookBody;
  /** The secret as a key object, prepared once rather than per signature. */
  private readonly key: KeyObject | null;
  /** Request line and the headers every alert carries, rendered once. */
  private readonly head: string;
  /** `head` is ASCII (the URL parser encodes hosts and paths so; checked once); the other headers always are. */
  private readonly headAscii: boolean;

  constructor(
    url: string,
    secret: string | undefined,
    origin: AlertOrigin,
    private readonly http: AlertHttpClient,
  ) {
    this.target = `${safeUrl(url)} (${secret === undefined ? 'unsigned' : 'signed'})`;
    this.parsed = new URL(url);
    this.body = new WebhookBody(origin);
    this.key = secret === undefined ? null : createSecretKey(Buffer.from(secret));
    this.head = requestLine(this.parsed) + headerLines({ 'content-type': 'application/json', 'user-agent': 'Service/1.0', [AlertHeader.Event]: 'alert' }).join('\r\n') + '\r\n';
    this.headAscii = !NON_ASCII.test(this.head);
  }

  /** The request webhookHeaders describes, header for header in its order, then content-length and the body. */
  send(alert: Alert, attempt: AttemptListener): void {
    const body = this.body.render(alert);
    // Usually all ASCII: then the body's characters are its bytes, and neither the signatures nor the write need encode it.
    const ascii = !NON_ASCII.test(body);
    const timestamp = String(Math.floor(Date.now() / 1000));
    let head = `${this.head}${AlertHeader.Trigger}: ${alert.trigger}\r\n${AlertHeader.Timestamp}: ${timestamp}\r\n`;
    if (this.key !== null) {
      head += `${AlertHeader.Signature}: ${signature(this.key, body, '', ascii)}\r\n${AlertHeader.SignatureV2}: ${signature(this.key, body, `${timestamp}.`, ascii)}\r\n`;
    }
    const length = ascii ? body.length : Buffer.byteLength(body);
    this.http.send(this.parsed, `${head}content-length: ${length}\r\n\r\n${body}`, ascii && this.headAscii, attempt);
  }

  async close(): Promise<void> {
    this.http.close();
  }
}
