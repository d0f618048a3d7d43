import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the upstream received under one trace id. */
export interface Received {
  count: number;
  /** The path (and query) of the first request, as it arrived. */
  url: string;
}

const ANSWER = JSON.stringify({ ok: true });

function answer(response: http.ServerResponse): void {
  if (response.destroyed) return;
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(ANSWER) });
  response.end(ANSWER);
}

/**
 * The governed upstream (UPSTREAM_URL of both gateways and the sidecar), on loopback: it answers
 * every request 200 after a delay (LOAD_UPSTREAM_DELAY_MS) and records it under the trace id the proxy sends (`X-Trace-ID`,
 * docs/architecture.md "Request path"), so what got through can be matched with what was
 * answered and audited.
 */
export class RecordingUpstream {
  readonly received = new Map<string, Received>();
  /** Requests that came without a trace id: none should. */
  untraced = 0;

  private constructor(
    private readonly server: http.Server,
    private readonly delayMs: number,
  ) {}

  /** Answers each request `delayMs` after it arrived whole. */
  static async start(delayMs: number): Promise<RecordingUpstream> {
    const server = http.createServer({ keepAliveTimeout: 60_000 });
    const upstream = new RecordingUpstream(server, delayMs);
    server.on('request', (request, response) => upstream.serve(request, response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return upstream;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private serve(request: http.IncomingMessage, response: http.ServerResponse): void {
    const traceId = request.headers['x-trace-id'];
    if (typeof traceId !== 'string') this.untraced++;
    else {
      const seen = this.received.get(traceId);
      if (seen) seen.count++;
      else this.received.set(traceId, { count: 1, url: request.url ?? '' });
    }
    request.resume();
    request.on('end', () => setTimeout(() => answer(response), this.delayMs));
  }
}
