import type { ConnectionOptions } from 'node:tls';
import { ExchangeListener, HttpPipeline } from './alert-http-pipeline';
import { AlertSendError, AttemptListener } from './alert-provider';

/** Time allowed for one attempt's answer. */
const ATTEMPT_TIMEOUT_MS = 10_000;

/** The HTTP side of the alert providers: a pipeline per origin, shared by the providers of one process. */
export class AlertHttpClient {
  private readonly pipelines = new Map<string, HttpPipeline>();
  /** The pipeline of each URL object seen: providers parse their URL once, and a URL's `origin` is computed anew at every read. */
  private byUrl = new WeakMap<URL, HttpPipeline>();

  constructor(private readonly options: { timeoutMs?: number; tls?: ConnectionOptions } = {}) {}

  /** POSTs `body` with these header lines (`name: value`); `attempt` hears of a 2xx, else of an AlertSendError with the status. */
  post(url: URL, headers: readonly string[], body: string, attempt: AttemptListener): void {
    let head = requestLine(url);
    for (const line of headers) head += `${line}\r\n`;
    this.send(url, Buffer.from(`${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`), attempt);
  }

  /** Sends a whole POST request to `url`, as `requestLine(url)` starts it: head, empty line and body. */
  send(url: URL, request: Buffer, attempt: AttemptListener): void {
    this.pipelineFor(url).send(request, new StatusCheck(url, attempt));
  }

  close(): void {
    for (const pipeline of this.pipelines.values()) pipeline.close();
    this.pipelines.clear();
    this.byUrl = new WeakMap();
  }

  private pipelineFor(url: URL): HttpPipeline {
    const known = this.byUrl.get(url);
    if (known !== undefined) return known;
    let pipeline = this.pipelines.get(url.origin);
    if (pipeline === undefined) {
      pipeline = new HttpPipeline(new URL(url.origin), { timeoutMs: this.options.timeoutMs ?? ATTEMPT_TIMEOUT_MS, tls: this.options.tls });
      this.pipelines.set(url.origin, pipeline);
    }
    this.byUrl.set(url, pipeline);
    return pipeline;
  }
}

/** The request line and host header of a POST to `url`, each line ended. */
export function requestLine(url: URL): string {
  return `POST ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`;
}

/** Turns an HTTP exchange's outcome into the attempt's: a 2xx is sent, anything else failed. */
class StatusCheck implements ExchangeListener {
  constructor(
    private readonly url: URL,
    private readonly attempt: AttemptListener,
  ) {}

  answered(status: number, retryAfterMs: number | null): void {
    if (status >= 200 && status < 300) this.attempt.sent();
    else this.attempt.failed(new AlertSendError(`POST ${safeUrl(this.url.href)} answered ${status}`, status, retryAfterMs ?? undefined));
  }

  failed(error: Error): void {
    this.attempt.failed(new AlertSendError(`POST ${safeUrl(this.url.href)} failed: ${error.message}`));
  }
}

/** `name: value` lines of a header map. */
export function headerLines(headers: Record<string, string>): string[] {
  return Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
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
