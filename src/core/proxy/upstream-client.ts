import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { ServiceHeader } from '../common/service-header';
import { queryWithout } from './injected-credential';
import proxyaddr from 'proxy-addr';
import { Dispatcher, Pool, util } from 'undici';

/**
 * Request headers never forwarded: those that describe one hop (RFC 9110 §7.6.1), the
 * gateway's own credentials (the agent token, an admin token, an API key, cookies of the
 * gateway's origin), the forwarding headers the gateway writes itself, and the headers with
 * which frameworks let a request name another method or path than the one decided on
 * (docs/proxy.md "What the upstream sees").
 */
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
  'x-admin-token',
  'x-api-key',
  'x-service-approval',
  // The gateway's own proof of its decision; an agent's would let it vouch for itself.
  'x-service-decision-token',
  'cookie',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'forwarded',
  'x-real-ip',
  'x-trace-id',
  'traceparent',
  // Method overrides (Express's method-override, ASP.NET, Google APIs) and URL rewrites (IIS, Symfony, Laravel).
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  'x-original-method',
  'x-original-url',
  'x-original-uri',
  'x-rewrite-url',
]);

/**
 * Headers naming the client or the address it used, forwarded only from a load balancer listed
 * in TRUSTED_PROXIES: from an agent they would let it name any address or prefix to the upstream.
 */
const PROXY_SET_REQUEST_HEADERS = new Set(['x-forwarded-port', 'x-forwarded-prefix', 'x-forwarded-server', 'x-forwarded-uri', 'x-client-ip', 'true-client-ip', 'cf-connecting-ip', 'fastly-client-ip', 'x-cluster-client-ip']);

const DROPPED_RESPONSE_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'trailer', 'upgrade']);

/** The decision headers the gateway sets on every response: an upstream's own are replaced. */
const ADDED_RESPONSE_HEADERS = new Set([ServiceHeader.Decision, ServiceHeader.Policy, ServiceHeader.TraceId, ServiceHeader.AgentId].map((name) => name.toLowerCase()));

/** How an upstream call ended, for the audit trail. */
export type UpstreamOutcome =
  | { kind: 'response'; status: number }
  | { kind: 'unreachable' }
  /** The upstream answered something that is not relayable HTTP (headers over 16 KiB, a malformed message); `problem` says what. */
  | { kind: 'invalid-response'; problem: string }
  | { kind: 'timeout' }
  | { kind: 'failed-after-headers'; status: number }
  /** The client went away before its answer was complete; the upstream call was stopped. */
  | { kind: 'client-closed'; upstreamStatus: number | null };

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
  /** Headers added to the forwarded request (an injected credential, the decision token), replacing the agent's. */
  addedHeaders?: Record<string, string>;
  /** An injected query credential: taken out of any `Location` or `Content-Location` the upstream answers. */
  queryCredential?: { name: string; value: string };
}

/**
 * Forwards allowed requests to UPSTREAM_URL over a keep-alive undici pool, streaming bodies both
 * ways: nothing is buffered whole. Hop-by-hop headers and the gateway's credentials are dropped,
 * X-Forwarded-* and the trace headers are added.
 */
export class UpstreamClient {
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly host: string;
  private readonly trustProxy: (address: string, hop: number) => boolean;

  /** `trustedProxies`: the addresses whose X-Forwarded-* headers are kept (TRUSTED_PROXIES). */
  constructor(upstreamUrl: string, timeoutMs: number, trustedProxies: readonly string[] = []) {
    this.trustProxy = proxyaddr.compile([...trustedProxies]);
    const url = new URL(upstreamUrl);
    // The timeouts are the pool's, so each request need not repeat them.
    this.pool = new Pool(url.origin, { connections: 256, keepAliveTimeout: 30_000, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.host = url.host;
  }

  /**
   * Sends the request and streams the answer into `response`; `done` is called once, when the
   * exchange is over. undici's dispatch API directly: `pool.stream` would add a promise, an
   * async resource and end-of-stream listeners to every request (docs/architecture.md, "Request
   * path: `/proxy/*`").
   */
  forward(request: ForwardRequest, response: ServerResponse, done: (outcome: UpstreamOutcome) => void): void {
    this.pool.dispatch(
      {
        path: this.basePath + request.pathAndQuery,
        method: request.method as Dispatcher.HttpMethod,
        headers: this.requestHeaders(request),
        body: request.body as Dispatcher.DispatchOptions['body'],
      },
      new ResponseRelay(response, request.responseHeaders, done, request.queryCredential),
    );
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  /** The request target the upstream receives for `pathAndQuery` (UPSTREAM_URL's path first). */
  targetOf(pathAndQuery: string): string {
    return this.basePath + pathAndQuery;
  }

  private requestHeaders(request: ForwardRequest): Record<string, string | string[]> {
    const incoming = request.incoming;
    const headers: Record<string, string | string[]> = {};
    const hopHeaders = connectionTokens(incoming.headers.connection);
    const added = request.addedHeaders;
    const client = incoming.socket.remoteAddress ?? '';
    // A client's own forwarding headers would let it name any address to the upstream: only a
    // configured proxy's are kept (TRUSTED_PROXIES).
    const viaProxy = client !== '' && this.trustProxy(client, 0);
    for (const name in incoming.headers) {
      if (DROPPED_REQUEST_HEADERS.has(name) || (hopHeaders !== null && hopHeaders.has(name)) || (added !== undefined && name in added)) continue;
      if (!viaProxy && PROXY_SET_REQUEST_HEADERS.has(name)) continue;
      headers[name] = incoming.headers[name]!;
    }
    if (added !== undefined) for (const name in added) headers[name] = added[name];
    if (request.body !== undefined && Buffer.isBuffer(request.body)) headers['content-length'] = String(request.body.length);
    const proto = (incoming.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
    const host = incoming.headers.host ?? '';
    const forwardedFor = viaProxy ? incoming.headers['x-forwarded-for'] : undefined;
    headers['x-forwarded-for'] = forwardedFor ? `${forwardedFor}, ${client}` : client;
    headers['x-forwarded-proto'] = (viaProxy ? firstValue(incoming.headers['x-forwarded-proto']) : undefined) ?? proto;
    headers['x-forwarded-host'] = (viaProxy ? firstValue(incoming.headers['x-forwarded-host']) : undefined) ?? host;
    const forwarded = viaProxy ? incoming.headers.forwarded : undefined;
    const element = forwardedElement(client, proto, host);
    headers.forwarded = forwarded ? `${forwarded}, ${element}` : element;
    headers['x-real-ip'] = viaProxy ? proxyaddr(incoming, this.trustProxy) : client;
    headers['x-trace-id'] = request.traceId;
    headers.traceparent = request.traceparent;
    headers.host = this.host;
    return headers;
  }
}

/** This hop's element of a Forwarded header (RFC 7239 4): an IPv6 address bracketed, values quoted unless they are tokens. */
function forwardedElement(client: string, proto: string, host: string): string {
  const node = client.includes(':') ? `[${client}]` : client;
  return `for=${forwardedValue(node)};proto=${proto};host=${forwardedValue(host)}`;
}

function forwardedValue(value: string): string {
  return /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(value) ? value : JSON.stringify(value);
}

/**
 * One upstream answer relayed to the client, as an undici dispatch handler: the status and the
 * upstream's end-to-end headers plus the decision headers in one writeHead, then the body chunk
 * by chunk with backpressure both ways (a full client socket pauses the upstream one).
 */
class ResponseRelay implements Dispatcher.DispatchHandler {
  private status = 0;
  private finished = false;
  private clientClosed = false;
  private abort: ((error: Error) => void) | null = null;
  private resume: (() => void) | null = null;
  private bodyDropped = false;

  constructor(
    private readonly response: ServerResponse,
    private readonly added: Record<string, string>,
    private readonly done: (outcome: UpstreamOutcome) => void,
    private readonly queryCredential?: { name: string; value: string },
  ) {}

  onConnect(abort: (error?: Error) => void): void {
    const watching = this.abort !== null;
    this.abort = abort;
    if (this.response.destroyed) return this.stop();
    // A client that goes away (before the upstream answers, or mid-answer) stops the upstream
    // call: nothing else would, as its closed socket never drains.
    if (!watching) this.response.once('close', () => this.stop());
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    // 1xx answers are informational; the final one follows.
    if (statusCode < 200) return true;
    // A redirect's body often repeats its Location (Express writes "Redirecting to <url>"): with a query credential injected it is not relayed.
    this.bodyDropped = this.queryCredential !== undefined && statusCode >= 300 && statusCode < 400;
    const headers = relayedHeaders(rawHeaders, this.added, this.queryCredential);
    this.response.writeHead(statusCode, this.bodyDropped ? withoutBody(headers) : headers);
    this.status = statusCode;
    this.resume = resume;
    return this.flowing(!this.response.writableNeedDrain);
  }

  onData(chunk: Buffer): boolean {
    if (this.bodyDropped) return true;
    return this.flowing(this.response.write(chunk));
  }

  onComplete(): void {
    this.finished = true;
    this.response.end();
    this.done({ kind: 'response', status: this.status });
  }

  private stop(): void {
    if (this.finished) return;
    this.clientClosed = true;
    this.abort!(new Error('the client closed the connection'));
  }

  /** Passes on whether the client's socket takes more; when it does not, resumes on its drain. */
  private flowing(more: boolean): boolean {
    if (!more) this.response.once('drain', this.resume!);
    return more;
  }

  onError(error: Error): void {
    if (this.finished) return;
    this.finished = true;
    if (this.clientClosed) return this.done({ kind: 'client-closed', upstreamStatus: this.status === 0 ? null : this.status });
    if (this.status !== 0) {
      this.response.destroy();
      return this.done({ kind: 'failed-after-headers', status: this.status });
    }
    if (isTimeout(error)) return this.done({ kind: 'timeout' });
    this.done(isInvalidResponse(error) ? { kind: 'invalid-response', problem: error.message } : { kind: 'unreachable' });
  }
}

/** The upstream's end-to-end headers as a flat name/value list, then `added` (which wins over the upstream's). */
function relayedHeaders(raw: Buffer[], added: Record<string, string>, queryCredential?: { name: string; value: string }): string[] {
  const headers: string[] = [];
  let connection: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = util.headerNameToString(raw[i]);
    if (name === 'connection') connection = raw[i + 1].toString('latin1');
    if (DROPPED_RESPONSE_HEADERS.has(name) || ADDED_RESPONSE_HEADERS.has(name)) continue;
    const value = raw[i + 1].toString('latin1');
    if (queryCredential !== undefined && (name === 'location' || name === 'content-location')) {
      const kept = withoutCredential(value, queryCredential);
      if (kept !== undefined) headers.push(name, kept);
      continue;
    }
    headers.push(name, value);
  }
  const hopHeaders = connectionTokens(connection);
  const kept = hopHeaders === null ? headers : withoutNames(headers, hopHeaders);
  for (const name in added) kept.push(name, added[name]);
  return kept;
}

/**
 * A Location the upstream answered, without the query credential the gateway added (an upstream
 * that redirects to its own URL echoes the query it was sent): its parameter is taken out, and a
 * Location that still holds the value anywhere (another parameter, the path, escaped) is dropped.
 */
function withoutCredential(location: string, credential: { name: string; value: string }): string | undefined {
  const at = location.indexOf('?');
  let kept = location;
  if (at !== -1) {
    const hash = location.indexOf('#', at);
    const end = hash === -1 ? location.length : hash;
    const query = queryWithout(location.slice(at + 1, end), credential.name);
    kept = `${location.slice(0, at)}${query === '' ? '' : `?${query}`}${location.slice(end)}`;
  }
  if (credential.value === '') return kept;
  let decoded = kept;
  try {
    decoded = decodeURIComponent(kept.replace(/\+/g, ' '));
  } catch {
    // Malformed escapes: the raw text is checked.
  }
  return kept.includes(credential.value) || decoded.includes(credential.value) ? undefined : kept;
}

/** Headers of an answer relayed without its body: an empty one. */
function withoutBody(headers: string[]): string[] {
  const kept = withoutNames(headers, new Set(['content-length', 'content-type', 'content-encoding']));
  kept.push('content-length', '0');
  return kept;
}

function withoutNames(headers: string[], names: Set<string>): string[] {
  const kept: string[] = [];
  for (let i = 0; i < headers.length; i += 2) if (!names.has(headers[i])) kept.push(headers[i], headers[i + 1]);
  return kept;
}

/** Header names listed in `Connection`, which are hop-by-hop for this message only. */
function connectionTokens(connection: string | undefined): Set<string> | null {
  if (connection === undefined || connection === 'keep-alive' || connection === 'close') return null;
  return new Set(connection.split(',').map((token) => token.trim().toLowerCase()));
}

/** undici's errors for an answer that came but cannot be parsed or relayed: the upstream was reached. */
function isInvalidResponse(error: Error): boolean {
  const code = (error as { code?: string }).code;
  return error.name === 'HTTPParserError' || code === 'UND_ERR_HEADERS_OVERFLOW' || code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH';
}

function isTimeout(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT';
}

function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
