import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { Dispatcher, Pool } from 'undici';

/** Request headers that describe one hop, never forwarded (RFC 9110 §7.6.1), plus the agent's credential. */
const DROPPED_REQUEST_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'expect',
  'host',
  'authorization',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-trace-id',
  'traceparent',
]);

const DROPPED_RESPONSE_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'trailer', 'upgrade']);

/** How an upstream call ended, for the audit trail. */
export type UpstreamOutcome = { kind: 'response'; status: number } | { kind: 'unreachable' } | { kind: 'timeout' } | { kind: 'failed-after-headers'; status: number };

export interface ForwardRequest {
  method: string;
  /** Path and query after the upstream base, starting with `/`. */
  pathAndQuery: string;
  /** The incoming request, for its headers and client address. */
  incoming: IncomingMessage;
  /** The body: already read (a policy inspected it), streamed, or none. */
  body: Buffer | Readable | AsyncIterable<Buffer> | undefined;
  traceId: string;
  traceparent: string;
  /** Headers added to the response (the decision headers). */
  responseHeaders: Record<string, string>;
}

/**
 * Forwards allowed requests to UPSTREAM_URL over a keep-alive undici pool, streaming bodies both
 * ways: nothing is buffered whole. Hop-by-hop headers are dropped, the agent token stays here,
 * X-Forwarded-* and the trace headers are added.
 */
export class UpstreamClient {
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly host: string;

  constructor(upstreamUrl: string, timeoutMs: number) {
    const url = new URL(upstreamUrl);
    // The timeouts are the pool's, so each request need not repeat them.
    this.pool = new Pool(url.origin, { connections: 256, keepAliveTimeout: 30_000, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.host = url.host;
  }

  /** Sends the request and streams the answer into `response`. */
  async forward(request: ForwardRequest, response: ServerResponse): Promise<UpstreamOutcome> {
    let status = 0;
    try {
      await this.pool.stream(
        {
          path: this.basePath + request.pathAndQuery,
          method: request.method as Dispatcher.HttpMethod,
          headers: this.requestHeaders(request),
          body: request.body as Dispatcher.DispatchOptions['body'],
        },
        ({ statusCode, headers }) => {
          status = statusCode;
          response.writeHead(statusCode, responseHeaders(headers, request.responseHeaders));
          return response;
        },
      );
      return { kind: 'response', status };
    } catch (error) {
      if (status !== 0) {
        response.destroy();
        return { kind: 'failed-after-headers', status };
      }
      return isTimeout(error) ? { kind: 'timeout' } : { kind: 'unreachable' };
    }
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  private requestHeaders(request: ForwardRequest): Record<string, string | string[]> {
    const incoming = request.incoming;
    const headers: Record<string, string | string[]> = {};
    const hopHeaders = connectionTokens(incoming.headers);
    for (const name in incoming.headers) {
      if (DROPPED_REQUEST_HEADERS.has(name) || (hopHeaders !== null && hopHeaders.has(name))) continue;
      headers[name] = incoming.headers[name]!;
    }
    if (request.body !== undefined && Buffer.isBuffer(request.body)) headers['content-length'] = String(request.body.length);
    const forwardedFor = incoming.headers['x-forwarded-for'];
    const client = incoming.socket.remoteAddress ?? '';
    headers['x-forwarded-for'] = forwardedFor ? `${forwardedFor}, ${client}` : client;
    headers['x-forwarded-proto'] = (incoming.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
    headers['x-forwarded-host'] = incoming.headers.host ?? '';
    headers['x-trace-id'] = request.traceId;
    headers.traceparent = request.traceparent;
    headers.host = this.host;
    return headers;
  }
}

function responseHeaders(upstream: IncomingHttpHeaders, added: Record<string, string>): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  const hopHeaders = connectionTokens(upstream);
  for (const name in upstream) {
    if (DROPPED_RESPONSE_HEADERS.has(name) || (hopHeaders !== null && hopHeaders.has(name))) continue;
    const value = upstream[name];
    if (value !== undefined) headers[name] = value;
  }
  return Object.assign(headers, added);
}

/** Header names listed in `Connection`, which are hop-by-hop for this message only. */
function connectionTokens(headers: IncomingHttpHeaders): Set<string> | null {
  const connection = headers.connection;
  if (connection === undefined || connection === 'keep-alive' || connection === 'close') return null;
  return new Set(connection.split(',').map((token) => token.trim().toLowerCase()));
}

function isTimeout(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT';
}
