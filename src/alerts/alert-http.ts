import type { ConnectionOptions } from 'node:tls';
import { HttpPipeline } from './alert-http-pipeline';
import { AlertSendError } from './alert-provider';

/** Time allowed for one attempt's answer. */
const ATTEMPT_TIMEOUT_MS = 10_000;

/** The HTTP side of the alert providers: a pipeline per origin, shared by the providers of one process. */
export class AlertHttpClient {
  private readonly pipelines = new Map<string, HttpPipeline>();

  constructor(private readonly options: { timeoutMs?: number; tls?: ConnectionOptions } = {}) {}

  /** POSTs `body` with these header lines (`name: value`); resolves on a 2xx, else throws AlertSendError with the status. */
  async post(url: URL, headers: readonly string[], body: string): Promise<void> {
    let status: number;
    try {
      status = await this.pipelineFor(url).post(url.pathname + url.search, headers, body);
    } catch (error) {
      throw new AlertSendError(`POST ${safeUrl(url.href)} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (status < 200 || status >= 300) throw new AlertSendError(`POST ${safeUrl(url.href)} answered ${status}`, status);
  }

  close(): void {
    for (const pipeline of this.pipelines.values()) pipeline.close();
    this.pipelines.clear();
  }

  private pipelineFor(url: URL): HttpPipeline {
    let pipeline = this.pipelines.get(url.origin);
    if (pipeline === undefined) {
      pipeline = new HttpPipeline(new URL(url.origin), { timeoutMs: this.options.timeoutMs ?? ATTEMPT_TIMEOUT_MS, tls: this.options.tls });
      this.pipelines.set(url.origin, pipeline);
    }
    return pipeline;
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

// Chat incoming-webhook URLs are secrets in their path (/services/T000/B000/XXXX): show the first segment only.
function maskPath(pathname: string): string {
  const [first, ...rest] = pathname.split('/').filter((segment) => segment !== '');
  return rest.length === 0 ? `/${first}` : `/${first}/***`;
}
