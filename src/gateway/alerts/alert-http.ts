import type { Socket } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import { buildConnector, Client, Dispatcher } from 'undici';
import { AlertSendError } from './alert-provider';

/** Time allowed for one attempt's answer, from when it is handed to the client. */
const ATTEMPT_TIMEOUT_MS = 10_000;

/** Keep-alive connections per receiver. */
const CONNECTIONS_PER_RECEIVER = 2;

/** Requests written ahead of their answers on one connection, once the receiver is known to keep connections open. */
const PIPELINING = 16;

/**
 * Most bytes of an answer read before its connection is dropped: nothing in an answer is used
 * but its status, and a receiver (or a proxy in front of it) that streams without end must not
 * cost the gateway memory or CPU.
 */
export const MAX_RESPONSE_BODY_BYTES = 1024 * 1024;

/**
 * The HTTP side of the alert providers: undici clients per receiver origin, shared by the
 * providers of one process. Redirects are not followed (undici follows none unless asked): a
 * 3xx fails the attempt like any answer but a 2xx.
 */
export class AlertHttpClient {
  private readonly receivers = new Map<string, Receiver>();

  constructor(private readonly options: { timeoutMs?: number; tls?: ConnectionOptions } = {}) {}

  /** POSTs `body` to `url`; resolves on a 2xx, else rejects with an AlertSendError carrying the status and any Retry-After. */
  post(url: URL, headers: Record<string, string>, body: string): Promise<void> {
    const receiver = this.receiverOf(url);
    return new Promise((resolve, reject) => receiver.post(url, headers, body, new Exchange(url, receiver, this.options.timeoutMs ?? ATTEMPT_TIMEOUT_MS, resolve, reject)));
  }

  async close(): Promise<void> {
    const receivers = [...this.receivers.values()];
    this.receivers.clear();
    await Promise.all(receivers.map((receiver) => receiver.close()));
  }

  private receiverOf(url: URL): Receiver {
    let receiver = this.receivers.get(url.origin);
    if (receiver === undefined) {
      receiver = new Receiver(url.origin, this.options.tls);
      this.receivers.set(url.origin, receiver);
    }
    return receiver;
  }
}

/**
 * One receiver's keep-alive connections (an undici Client each), taking POSTs in turn. Each
 * carries one request at a time until an answer shows the receiver keeps connections open; then
 * requests are pipelined: an alert per denial is a POST per denial, and waiting for each answer
 * before the next request cost about three times the CPU (bench/alerts.bench.ts). Many receivers
 * (HTTP/1.0 servers, `Connection: close`) read one request per connection, and some process what
 * was pipelined behind it though they close without answering it, which resending would repeat.
 */
class Receiver {
  private readonly clients: Client[];
  private next = 0;
  private pipelining = 1;

  constructor(origin: string, tls: ConnectionOptions | undefined) {
    const connect = coalescingConnector(tls);
    this.clients = Array.from({ length: CONNECTIONS_PER_RECEIVER }, () => new Client(origin, { connect, pipelining: 1 }));
  }

  post(url: URL, headers: Record<string, string>, body: string, exchange: Exchange): void {
    const client = this.clients[this.next];
    this.next = (this.next + 1) % this.clients.length;
    // Alerts are delivered at least once (receivers drop ids they have seen, the email API has an
    // idempotency key), so a POST may be pipelined, and resent when its connection closes unanswered.
    client.dispatch({ method: 'POST', path: `${url.pathname}${url.search}`, headers, body, idempotent: true, blocking: false }, exchange);
  }

  /** An answer said whether the receiver keeps the connection open (no `Connection: close`). */
  answered(keepsOpen: boolean): void {
    const pipelining = keepsOpen ? PIPELINING : 1;
    if (pipelining === this.pipelining) return;
    this.pipelining = pipelining;
    for (const client of this.clients) client.pipelining = pipelining;
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((client) => client.destroy()));
  }
}

/**
 * One POST's answer as undici reports it: its status settles the attempt; its body is discarded
 * as it arrives, and past MAX_RESPONSE_BODY_BYTES the request (and with it the connection) is
 * aborted. The attempt's time is a deadline from when it was handed over, not an idle timer: a
 * receiver that trickles bytes, or a stream of new requests on the connection, does not extend it.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private readonly deadline: NodeJS.Timeout;
  private expired = false;
  private settled = false;
  private bodyBytes = 0;

  constructor(
    private readonly url: URL,
    private readonly receiver: Receiver,
    private readonly timeoutMs: number,
    private readonly resolve: () => void,
    private readonly reject: (error: AlertSendError) => void,
  ) {
    this.deadline = setTimeout(() => this.expire(), timeoutMs);
    // The connection keeps the process alive while it matters; a pending deadline must not (`ags alerts test` exits when done).
    this.deadline.unref();
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.expired) controller.abort(new Error(this.timeoutMessage()));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200) return;
    this.receiver.answered(!/\bclose\b/i.test(String(headers.connection ?? '')));
    if (statusCode < 300) return this.settle(null);
    this.settle(new AlertSendError(`POST ${safeUrl(this.url.href)} answered ${statusCode}`, statusCode, retryAfterMs(headers['retry-after']) ?? undefined));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.bodyBytes += chunk.length;
    if (this.bodyBytes > MAX_RESPONSE_BODY_BYTES) controller.abort(new Error(`answer longer than ${MAX_RESPONSE_BODY_BYTES} bytes`));
  }

  onResponseEnd(): void {
    clearTimeout(this.deadline);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    clearTimeout(this.deadline);
    this.settle(new AlertSendError(`POST ${safeUrl(this.url.href)} failed: ${this.expired ? this.timeoutMessage() : error.message}`));
  }

  private expire(): void {
    this.expired = true;
    this.controller?.abort(new Error(this.timeoutMessage()));
    this.settle(new AlertSendError(`POST ${safeUrl(this.url.href)} failed: ${this.timeoutMessage()}`));
  }

  private timeoutMessage(): string {
    return `no answer within ${this.timeoutMs} ms`;
  }

  private settle(error: AlertSendError | null): void {
    if (this.settled) return;
    this.settled = true;
    if (error === null) this.resolve();
    else this.reject(error);
  }
}

/**
 * undici's connector with Nagle's algorithm left on: while a connection has requests on the
 * wire unacknowledged, the kernel sends the next small ones of a burst together rather than a
 * packet each (about a third less CPU per alert, for the sender and the receiver alike;
 * bench/alerts.bench.ts). Alerts do not need the lowest latency.
 */
function coalescingConnector(tls: ConnectionOptions | undefined): buildConnector.connector {
  const connect = buildConnector({ ...tls });
  return (options, callback) =>
    connect(options, (...result) => {
      (result[1] as Socket | null | undefined)?.setNoDelay(false);
      callback(...result);
    });
}

/**
 * How long a Retry-After asks to wait, in either form RFC 9110 allows: seconds, or an HTTP date
 * (`Retry-After: Wed, 25 Nov 2026 02:00:00 GMT`, which rate-limiting proxies and CDNs send),
 * counted from now; null without one or when unreadable.
 */
export function retryAfterMs(header: string | string[] | undefined, nowMs = Date.now()): number | null {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (value === undefined || value === '') return null;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const epochMs = Date.parse(value);
  return Number.isNaN(epochMs) ? null : Math.max(0, epochMs - nowMs);
}

/** A URL fit for logs and the CLI: no credentials, no query (webhook URLs often carry their secret there). */
export function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.length > 1 ? maskPath(parsed.pathname) : parsed.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

// Webhook URLs are often secrets in their path: a chat webhook's last segments (/services/T000/B000/XXXX),
// a one-segment token (webhook.site/<uuid>, ntfy.sh/<topic>). Only a first segment with more after it is shown.
function maskPath(pathname: string): string {
  const [first, ...rest] = pathname.split('/').filter((segment) => segment !== '');
  return rest.length === 0 ? '/***' : `/${first}/***`;
}
