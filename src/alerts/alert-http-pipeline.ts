import net from 'node:net';
import tls, { ConnectionOptions } from 'node:tls';
import { AlertSendError } from './alert-provider';
import { Fifo } from './fifo';

/** Told how one request went: the response's status (and its Retry-After, in ms, if any), or why there is none. */
export interface ExchangeListener {
  answered(status: number, retryAfterMs: number | null): void;
  failed(error: Error): void;
}

/** One request (head and body) waiting for its response. */
interface Exchange {
  /** The whole request, head and body. */
  bytes: Buffer;
  listener: ExchangeListener;
  /** When its answer is overdue (ms since the epoch): the attempt's time runs from when it is handed over. */
  deadline: number;
}

/** A response head as parsed, kept to skip parsing the next identical head (a receiver answers every alert alike). */
interface ParsedHead {
  head: string;
  status: number;
  retryAfter: RetryAfter | null;
  closeAfter: boolean;
  body: BodyMode | null;
}

/** Where the response parser is in the current response. */
/** `chunked.left`: bytes of the current chunk (and its CRLF) still to skip; 0 when a chunk-size line is next. */
type BodyMode = { kind: 'length'; left: number } | { kind: 'chunked'; left: number } | { kind: 'until-close' } | { kind: 'none' };

/** A Retry-After header: a delay in seconds, or a time (an HTTP date, RFC 9110), read as milliseconds. */
type RetryAfter = { kind: 'delay'; ms: number } | { kind: 'at'; epochMs: number };

/** Most requests written ahead of their responses on one connection. */
const MAX_PIPELINED = 32;

/**
 * Most bytes of one response body read before the connection is dropped: nothing in an answer
 * is used but its status, and a receiver (or a proxy in front of it) that streams without end
 * must not cost the gateway memory or CPU.
 */
export const MAX_RESPONSE_BODY_BYTES = 1024 * 1024;

/** Longest chunk-size line accepted (the size in hex plus any chunk extensions). */
const MAX_CHUNK_LINE = 1024;

/**
 * POSTs to one origin over a few keep-alive HTTP/1.1 connections, pipelined: the requests of a
 * burst go out in one write and their responses are read in order. An alert per denied request
 * is a request per denied request, and a general-purpose client spends about as much CPU on one
 * POST as the gateway spends on the denial itself (bench/alerts.bench.ts); this only frames
 * the request, and reads the status and the framing of the response.
 *
 * A new connection carries one request at a time until an answer shows the receiver keeps it
 * open: many receivers (HTTP/1.0 servers, `Connection: close`) read one request per connection,
 * and what is pipelined behind it is lost with the connection.
 *
 * Delivery is at least once. When a connection that has answered something closes, what it left
 * unanswered is resent on a new one without counting as a failed attempt: the receiver ended the
 * connection, not the exchange. When a connection fails before any answer, what is in flight
 * fails and is retried, though the receiver may have processed some (receivers dedupe by alert id).
 */
export class HttpPipeline {
  private readonly connections: PipelinedConnection[];
  private readonly timeoutMs: number;
  private next = 0;

  constructor(
    readonly origin: URL,
    options: { connections?: number; timeoutMs: number; tls?: ConnectionOptions },
  ) {
    this.timeoutMs = options.timeoutMs;
    this.connections = Array.from({ length: options.connections ?? 2 }, () => new PipelinedConnection(origin, options.timeoutMs, options.tls));
  }

  /** Sends `POST path` with these header lines (each `name: value`) and body; resolves with the status. */
  post(path: string, headers: readonly string[], body: string): Promise<number> {
    let head = `POST ${path} HTTP/1.1\r\nhost: ${this.origin.host}\r\n`;
    for (const line of headers) head += `${line}\r\n`;
    return new Promise((resolve, reject) => this.send(Buffer.from(`${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`), { answered: resolve, failed: reject }));
  }

  /** Sends a whole request (its head and body) and tells `listener` how it went. */
  send(request: Buffer, listener: ExchangeListener): void {
    const connection = this.connections[this.next];
    this.next = (this.next + 1) % this.connections.length;
    connection.send({ bytes: request, listener, deadline: Date.now() + this.timeoutMs });
  }

  close(): void {
    for (const connection of this.connections) connection.close();
  }
}

class PipelinedConnection {
  private socket: net.Socket | null = null;
  private connected = false;
  /** Written, awaiting their responses, oldest first. */
  private readonly inFlight = new Fifo<Exchange>();
  /** Not yet written (connecting, or MAX_PIPELINED in flight). */
  private readonly queued = new Fifo<Exchange>();
  private lastHead: ParsedHead | null = null;
  private writeScheduled = false;
  private input = '';
  private status = 0;
  /** The current response's Retry-After, if any. */
  private retryAfter: RetryAfter | null = null;
  private body: BodyMode | null = null;
  /** Body bytes of the current response read so far, against MAX_RESPONSE_BODY_BYTES. */
  private bodyRead = 0;
  private closeAfter = false;
  /** The receiver answered on this connection without closing it: requests may be pipelined. */
  private keepsAlive = false;
  /** Exchanges this connection settled: when it closes, proof that it was the connection that ended. */
  private settled = 0;
  private closed = false;
  /** Checks the oldest requests' deadlines (and the connect's): one timer per connection, not per request. */
  private timer: NodeJS.Timeout | null = null;
  private connectDeadline = 0;

  constructor(
    private readonly origin: URL,
    private readonly timeoutMs: number,
    private readonly tlsOptions: ConnectionOptions | undefined,
  ) {}

  send(exchange: Exchange): void {
    this.queued.push(exchange);
    this.armTimer(exchange.deadline);
    if (this.socket === null) this.connect();
    else this.scheduleWrite();
  }

  close(): void {
    this.closed = true;
    this.fail(new AlertSendError('closed'));
  }

  private connect(): void {
    const secure = this.origin.protocol === 'https:';
    const port = Number(this.origin.port) || (secure ? 443 : 80);
    const host = this.origin.hostname.replace(/^\[|\]$/g, '');
    const socket = secure
      ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host, ...this.tlsOptions }, () => this.onConnected(socket))
      : net.connect({ host, port }, () => this.onConnected(socket));
    this.socket = socket;
    socket.setNoDelay(true);
    this.connectDeadline = Date.now() + this.timeoutMs;
    const first = this.queued.peek();
    if (first !== undefined) this.armTimer(first.deadline);
    socket.on('data', (chunk: Buffer) => this.onData(socket, chunk));
    socket.on('error', (error) => this.onClosed(socket, error));
    socket.on('close', () => this.onClosed(socket, null));
  }

  private onConnected(socket: net.Socket): void {
    if (this.socket !== socket) return;
    this.connected = true;
    this.scheduleWrite();
  }

  // Requests queued in the same turn go out in one write.
  private scheduleWrite(): void {
    if (this.writeScheduled || !this.connected) return;
    this.writeScheduled = true;
    setImmediate(() => this.write());
  }

  private write(): void {
    this.writeScheduled = false;
    const socket = this.socket;
    if (socket === null || !this.connected || this.closeAfter) return;
    const most = this.keepsAlive ? MAX_PIPELINED : 1;
    const out: Buffer[] = [];
    let length = 0;
    while (this.queued.length > 0 && this.inFlight.length < most) {
      const exchange = this.queued.shift()!;
      this.inFlight.push(exchange);
      out.push(exchange.bytes);
      length += exchange.bytes.length;
    }
    // One block, one write: a string of the requests cost a third of the alert worker's time to flatten and encode.
    if (out.length > 0) socket.write(out.length === 1 ? out[0] : Buffer.concat(out, length));
  }

  // A deadline per request, not an idle timer: a receiver that trickles bytes, or a stream of new requests, must not keep an exchange alive.
  private armTimer(at: number): void {
    if (this.timer !== null) return;
    this.timer = setTimeout(() => this.checkDeadline(), Math.max(0, at - Date.now()));
    // The socket keeps the process alive while it matters; a pending check must not (`ags alerts test` exits when done).
    this.timer.unref();
  }

  private checkDeadline(): void {
    this.timer = null;
    const now = Date.now();
    const socket = this.socket;
    if (socket !== null && !this.connected && this.connectDeadline <= now) {
      // Never connected: onClosed fails everything waiting.
      socket.destroy(new Error(`no answer within ${this.timeoutMs} ms`));
      return;
    }
    const failed = new AlertSendError(`POST ${this.origin.origin} failed: no answer within ${this.timeoutMs} ms`);
    let stalled = false;
    while ((this.inFlight.peek()?.deadline ?? Infinity) <= now) {
      stalled = true;
      this.settled++;
      this.inFlight.shift()!.listener.failed(failed);
    }
    while ((this.queued.peek()?.deadline ?? Infinity) <= now) this.queued.shift()!.listener.failed(failed);
    // The connection may be mid-answer: it cannot be reused; what is in flight behind goes out again on a new one.
    if (stalled) socket?.destroy();
    const next = this.inFlight.peek()?.deadline ?? this.queued.peek()?.deadline;
    if (next !== undefined) this.armTimer(next);
  }

  private onData(socket: net.Socket, chunk: Buffer): void {
    if (this.socket !== socket) return;
    // latin1 maps bytes one to one, so string lengths are byte counts for the body framing.
    this.input += chunk.toString('latin1');
    try {
      while (this.parse()) {
        /* one response per turn of the loop */
      }
    } catch (error) {
      socket.destroy(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    // After a `Connection: close` response the server reads nothing more: what is still in flight goes out again on a new connection.
    if (this.closeAfter && this.body === null) socket.destroy();
    else this.scheduleWrite();
  }

  /** Consumes one response head or body from `input`; false when more bytes are needed. */
  private parse(): boolean {
    if (this.body === null) return this.parseHead();
    const body = this.body;
    switch (body.kind) {
      case 'none':
        return this.finish();
      case 'length': {
        const take = this.skip(body.left);
        body.left -= take;
        if (body.left === 0) return this.finish();
        return this.overLimit() ? this.giveUpOnBody() : false;
      }
      case 'chunked':
        return this.parseChunk(body);
      case 'until-close':
        this.skip(this.input.length);
        return this.overLimit() ? this.giveUpOnBody() : false;
    }
  }

  /** Discards up to `count` body bytes of `input`; returns how many. */
  private skip(count: number): number {
    const take = Math.min(count, this.input.length);
    this.input = this.input.slice(take);
    this.bodyRead += take;
    return take;
  }

  private overLimit(): boolean {
    return this.bodyRead > MAX_RESPONSE_BODY_BYTES;
  }

  // The status is known: the exchange is answered, and the connection (still mid-body) is dropped.
  private giveUpOnBody(): boolean {
    this.closeAfter = true;
    return this.finish();
  }

  private parseHead(): boolean {
    const end = this.input.indexOf('\r\n\r\n');
    if (end < 0) {
      if (this.input.length > 64 * 1024) throw new Error('response head too large');
      return false;
    }
    const head = this.input.slice(0, end);
    this.input = this.input.slice(end + 4);
    const last = this.lastHead;
    if (last !== null && last.head === head) {
      this.status = last.status;
      this.retryAfter = last.retryAfter;
      this.closeAfter = last.closeAfter;
      this.body = last.body === null ? null : { ...last.body };
      return true;
    }
    const status = /^HTTP\/1\.[01] (\d{3})/.exec(head);
    if (status === null) throw new Error('not an HTTP/1.1 response');
    this.status = Number(status[1]);
    if (this.status < 200) return true;
    const lower = head.toLowerCase();
    this.retryAfter = parseRetryAfter(head);
    if (/\r\nconnection:[^\r]*close/.test(lower) || head.startsWith('HTTP/1.0')) this.closeAfter = true;
    const length = /\r\ncontent-length: *(\d+)/.exec(lower);
    if (this.status === 204 || this.status === 304) this.body = { kind: 'none' };
    else if (/\r\ntransfer-encoding:[^\r]*chunked/.test(lower)) this.body = { kind: 'chunked', left: 0 };
    else if (length !== null) this.body = { kind: 'length', left: Number(length[1]) };
    else {
      this.body = { kind: 'until-close' };
      this.closeAfter = true;
    }
    this.lastHead = { head, status: this.status, retryAfter: this.retryAfter, closeAfter: this.closeAfter, body: { ...this.body } };
    return true;
  }

  // Chunk data is discarded as it arrives: a chunk may announce gigabytes.
  private parseChunk(body: { left: number }): boolean {
    if (body.left > 0) {
      body.left -= this.skip(body.left);
      if (this.overLimit()) return this.giveUpOnBody();
      return body.left === 0;
    }
    const lineEnd = this.input.indexOf('\r\n');
    if (lineEnd < 0) {
      if (this.input.length > MAX_CHUNK_LINE) throw new Error('bad chunk size line');
      return false;
    }
    const size = parseInt(this.input.slice(0, lineEnd), 16);
    if (Number.isNaN(size)) throw new Error('bad chunk size');
    if (size === 0) {
      // The last chunk, then optional trailers, then an empty line.
      const end = this.input.indexOf('\r\n\r\n', lineEnd - 2);
      if (end < 0) {
        if (this.input.length > 64 * 1024) throw new Error('response trailers too large');
        return false;
      }
      this.input = this.input.slice(end + 4);
      return this.finish();
    }
    this.input = this.input.slice(lineEnd + 2);
    body.left = size + 2;
    return true;
  }

  private finish(): boolean {
    this.body = null;
    this.bodyRead = 0;
    this.settled++;
    if (!this.closeAfter) this.keepsAlive = true;
    this.inFlight.shift()?.listener.answered(this.status, retryAfterMs(this.retryAfter));
    return !this.closeAfter;
  }

  private onClosed(socket: net.Socket, error: Error | null): void {
    if (this.socket !== socket) return;
    // A body that runs until the connection closes has ended with it.
    if (this.body?.kind === 'until-close' && error === null) this.finish();
    const wasConnected = this.connected;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.socket = null;
    this.connected = false;
    this.body = null;
    this.bodyRead = 0;
    this.input = '';
    const unanswered = this.inFlight.drain();
    const reason = error === null ? 'connection closed before the response' : error.message;
    const failed = new AlertSendError(`POST ${this.origin.origin} failed: ${reason}`);
    // A new connection answers at least its first request or fails it, so resending cannot loop.
    if (this.settled > 0 && !this.closed) this.queued.unshiftAll(unanswered);
    else for (const exchange of unanswered) exchange.listener.failed(failed);
    // Never connected: the receiver is unreachable, so what waits fails too (and is retried with backoff).
    if (!wasConnected) for (const exchange of this.queued.drain()) exchange.listener.failed(failed);
    this.closeAfter = false;
    this.keepsAlive = false;
    this.settled = 0;
    if (this.queued.length > 0 && !this.closed) this.connect();
  }

  private fail(error: Error): void {
    const socket = this.socket;
    for (const exchange of this.queued.drain()) exchange.listener.failed(error);
    socket?.destroy();
  }
}

/**
 * The Retry-After of a response head, in either form RFC 9110 allows: seconds, or an HTTP date
 * (`Retry-After: Wed, 25 Nov 2026 02:00:00 GMT`, which rate-limiting proxies and CDNs send).
 * Read as seconds only, a date gave the shortest wait, and a throttled receiver was asked again
 * twice a second for minutes.
 */
function parseRetryAfter(head: string): RetryAfter | null {
  const value = /\r\nretry-after:[ \t]*([^\r]*?)[ \t]*(?:\r|$)/i.exec(head)?.[1];
  if (value === undefined) return null;
  if (/^\d+$/.test(value)) return { kind: 'delay', ms: Number(value) * 1000 };
  const epochMs = Date.parse(value);
  return Number.isNaN(epochMs) ? null : { kind: 'at', epochMs };
}

/** How long a Retry-After asks to wait: a date is counted from now, when its answer is read (a head seen again is reused). */
function retryAfterMs(retryAfter: RetryAfter | null): number | null {
  if (retryAfter === null) return null;
  return retryAfter.kind === 'delay' ? retryAfter.ms : Math.max(0, retryAfter.epochMs - Date.now());
}
