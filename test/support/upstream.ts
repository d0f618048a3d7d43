import { randomBytes } from 'node:crypto';
import http, { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the upstream received it. */
export interface UpstreamRequest {
  method: string;
  /** Path and query exactly as they arrived on the wire. */
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** What the upstream answered with, for routes that make up their body (`/bytes/<n>`). */
  sent?: Buffer;
  /** How far a streamed answer (`/stream/<n>`, `/hold`) has got. */
  streamed?: StreamProgress;
}

export interface StreamProgress {
  /** Bytes handed to the socket so far. */
  written: number;
  /** The connection closed before the answer was complete. */
  cutOff: boolean;
}

/** The byte every streamed chunk is filled with. */
export const STREAM_BYTE = 7;
const STREAM_CHUNK = Buffer.alloc(64 * 1024, STREAM_BYTE);

/**
 * A real HTTP server standing in for UPSTREAM_URL. It records every request and answers by path:
 * - `/raw/...`: the request body byte for byte, with the request's Content-Type;
 * - `/status/<code>`: that status with a JSON body naming it;
 * - `/bytes/<n>`: n random bytes (kept in `sent`);
 * - `/slow/<ms>`: waits, then echoes;
 * - `/headers`: custom response headers, hop-by-hop ones, two Set-Cookie and two X-Service-* among them;
 * - `/stream/<n>`: n chunks of 64 KiB, each written when the socket takes it (backpressure);
 * - `/hold[/<code>]`: that status (200 by default) and one 64 KiB chunk, then silence until the connection closes;
 * - anything else: a JSON echo of the request (method, url, headers, body as text).
 */
export interface TestUpstream {
  url: string;
  requests: UpstreamRequest[];
  /** Requests whose URL starts with `prefix`. */
  received(prefix: string): UpstreamRequest[];
  close(): Promise<void>;
}

export interface EchoBody {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export async function startUpstream(): Promise<TestUpstream> {
  const requests: UpstreamRequest[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const recorded: UpstreamRequest = { method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks) };
      requests.push(recorded);
      answer(request, response, recorded);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    received: (prefix) => requests.filter((request) => request.url.startsWith(prefix)),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function answer(request: IncomingMessage, response: ServerResponse, recorded: UpstreamRequest): void {
  const path = recorded.url.split('?')[0];
  const [, route, argument] = path.split('/');
  switch (route) {
    case 'raw':
      response.writeHead(200, { 'content-type': request.headers['content-type'] ?? 'application/octet-stream', 'content-length': recorded.body.length });
      response.end(recorded.body);
      return;
    case 'status': {
      const status = Number(argument);
      const body = JSON.stringify({ upstreamStatus: status, path });
      response.writeHead(status, { 'content-type': 'application/json', 'x-upstream-status': String(status) });
      response.end(body);
      return;
    }
    case 'bytes': {
      const bytes = randomBytes(Number(argument));
      recorded.sent = bytes;
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.length });
      response.end(bytes);
      return;
    }
    case 'slow':
      setTimeout(() => echo(response, recorded), Number(argument)).unref();
      return;
    case 'big-header':
      response.writeHead(200, { 'x-big': 'a'.repeat(Number(argument)) });
      response.end('ok');
      return;
    case 'headers':
      response.writeHead(200, {
        'content-type': 'text/plain',
        connection: 'x-custom',
        'x-custom': '1',
        'keep-alive': 'timeout=5',
        'x-end-to-end': 'kept',
        'set-cookie': ['a=1; Path=/', 'b=2; Path=/'],
        'x-service-agent-id': 'from-upstream',
        'x-service-trace-id': 'from-upstream',
      });
      response.end('headers');
      return;
    case 'stream':
      stream(response, recorded, Number(argument));
      return;
    case 'hold':
      stream(response, recorded, 1, false, argument === undefined ? 200 : Number(argument));
      return;
    default:
      echo(response, recorded);
  }
}

/** Writes `chunks` chunks as the socket takes them, then ends the answer (or, with `end` false, leaves it open). */
function stream(response: ServerResponse, recorded: UpstreamRequest, chunks: number, end = true, status = 200): void {
  const progress: StreamProgress = { written: 0, cutOff: false };
  recorded.streamed = progress;
  let left = chunks;
  response.on('close', () => (progress.cutOff = !response.writableFinished));
  response.writeHead(status, { 'content-type': 'application/octet-stream' });
  const pump = (): void => {
    while (left > 0 && !response.destroyed) {
      left--;
      progress.written += STREAM_CHUNK.length;
      if (!response.write(STREAM_CHUNK)) return void response.once('drain', pump);
    }
    if (left === 0 && end) response.end();
  };
  pump();
}

function echo(response: ServerResponse, recorded: UpstreamRequest): void {
  if (response.destroyed) return;
  const body: EchoBody = { method: recorded.method, url: recorded.url, headers: recorded.headers, body: recorded.body.toString('utf8') };
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

/** A response read whole, as bytes. */
export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface RawRequestOptions {
  method?: string;
  headers?: Record<string, string | string[]>;
  /** A Buffer is sent with Content-Length; chunks are written one by one without it (chunked). */
  body?: Buffer | Buffer[];
}

/**
 * One request with node:http, the path sent exactly as given (fetch would normalise dot
 * segments and percent-encoding before the gateway saw them).
 */
export function rawRequest(baseUrl: string, path: string, options: RawRequestOptions = {}): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.request({ hostname, port, path, method: options.method ?? 'GET', headers: options.headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    });
    request.on('error', reject);
    const body = options.body;
    if (body === undefined) request.end();
    else if (Buffer.isBuffer(body)) {
      request.setHeader('content-length', body.length);
      request.end(body);
    } else {
      for (const chunk of body) request.write(chunk);
      request.end();
    }
  });
}
