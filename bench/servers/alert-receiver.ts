/**
 * The alerting benchmark's webhook receiver. It stands in for a receiver on a machine of its
 * own, so while the load runs it does only what the gateway waits on: it frames the pipelined
 * HTTP/1.1 requests (Content-Length), counts them and answers them, one write per read, and
 * keeps the bytes. The checks a receiver following docs/alerts.md makes (the `alert` event, both
 * signatures compared in constant time, the signed timestamp's age, distinct alert ids) run on
 * the kept bytes when the bench asks (`verify`), between rounds, so they take no CPU from the
 * gateway being measured. Checking inline cost about 12 µs of CPU per alert on a 2-core machine
 * whose every request the gateway spends about 50 µs on, most of it the HMAC and the id set.
 *
 * It runs at the gateway's priority, so what it takes counts against the alerting gateway's
 * throughput (at nice 19 it was starved on the saturated cores until the gateway had 10,000
 * deliveries waiting for answers and dropped alerts, which a receiver on a machine of its own
 * would not have caused). A round ends when the last of its alerts has arrived here (`await`).
 *
 * Runs as its own process (child_process.fork); IPC: `count`, `await`, `verify`, `reset`.
 */
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { AlertCounts, ChildMessage, ParentMessage } from './messages';

const RESPONSE = Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = Buffer.from('\r\ncontent-length:');
/** Oldest signed timestamp accepted, as docs/alerts.md advises receivers. */
const MAX_AGE_SECONDS = 300;

/** One connection's bytes: what the bench will verify, and the unframed rest of the last read. */
interface Connection {
  kept: Buffer[];
  rest: Buffer | null;
}

function main(): void {
  const key = createSecretKey(Buffer.from(process.env.BENCH_ALERT_SECRET ?? ''));
  const connections = new Set<Connection>();
  let requests = 0;
  let lastAtMs = 0;
  let awaited: { count: number; timer: NodeJS.Timeout } | null = null;
  const verified = noCounts();
  const ids = new Set<string>();

  const reached = (): void => {
    if (awaited === null || requests < awaited.count) return;
    clearTimeout(awaited.timer);
    awaited = null;
    send({ type: 'reached', requests, atMs: Date.now() });
  };

  const server = net.createServer((socket) => {
    const connection: Connection = { kept: [], rest: null };
    connections.add(connection);
    socket.on('data', (chunk: Buffer) => {
      connection.kept.push(chunk);
      const input = connection.rest === null ? chunk : Buffer.concat([connection.rest, chunk]);
      const framed = frame(input);
      connection.rest = framed.end < input.length ? input.subarray(framed.end) : null;
      if (framed.count === 0) return;
      requests += framed.count;
      lastAtMs = Date.now();
      socket.write(framed.count === 1 ? RESPONSE : Buffer.concat(Array<Buffer>(framed.count).fill(RESPONSE)));
      reached();
    });
    socket.on('error', () => socket.destroy());
  });

  /** Checks every request kept since the last call, as a receiver following docs/alerts.md does, and frees their bytes. */
  const verify = (): AlertCounts => {
    const nowSeconds = Date.now() / 1000;
    for (const connection of connections) {
      const input = Buffer.concat(connection.kept);
      connection.kept = connection.rest === null ? [] : [connection.rest];
      frame(input, (start, head, end) => check(input.toString('latin1', start, head), input.subarray(head + 4, end), nowSeconds));
    }
    verified.ids = ids.size;
    return { ...verified };
  };

  /** One request: its head (latin1, without the empty line) and its raw body. */
  const check = (head: string, body: Buffer, nowSeconds: number): void => {
    if (!/\r\nx-service-event: *alert\r?$/im.test(head)) return;
    verified.alerts++;
    const id = /"id":"(alert_[0-9a-f]+)"/.exec(body.toString('latin1', 0, 120))?.[1];
    if (id !== undefined) ids.add(id);
    verified.checked++;
    const timestamp = header(head, 'x-service-timestamp');
    const valid = matches(header(head, 'x-service-signature'), sign(body)) && matches(header(head, 'x-service-signature-v2'), sign(body, `${timestamp}.`));
    if (valid) verified.signed++;
    if (valid && Math.abs(nowSeconds - Number(timestamp)) <= MAX_AGE_SECONDS) verified.fresh++;
  };

  const sign = (body: Buffer, prefix = ''): string => `sha256=${createHmac('sha256', key).update(prefix).update(body).digest('hex')}`;

  server.listen(0, '127.0.0.1', () => send({ type: 'listening', port: (server.address() as AddressInfo).port }));
  process.on('message', (message: ParentMessage) => {
    switch (message.type) {
      case 'count':
        return send({ type: 'received', requests, lastAtMs });
      case 'await':
        if (awaited !== null) clearTimeout(awaited.timer);
        awaited = { count: message.count, timer: setTimeout(() => ((awaited = null), send({ type: 'received', requests, lastAtMs })), message.timeoutMs) };
        return reached();
      case 'verify':
        return send({ type: 'alerts', ...verify() });
      case 'reset':
        verify();
        requests = 0;
        Object.assign(verified, noCounts());
        ids.clear();
        return send({ type: 'received', requests, lastAtMs });
    }
  });
  process.on('disconnect', () => process.exit(0));
}

/** The whole requests at the start of `input`: how many, and where the last one ends; `each` is shown where each starts, its head ends and it ends. */
function frame(input: Buffer, each?: (start: number, head: number, end: number) => void): { count: number; end: number } {
  let count = 0;
  let at = 0;
  for (;;) {
    const head = input.indexOf(HEAD_END, at);
    if (head < 0) break;
    const end = head + 4 + contentLength(input, at, head);
    if (end > input.length) break;
    each?.(at, head, end);
    count++;
    at = end;
  }
  return { count, end: at };
}

/** The Content-Length of the head between `start` and `end` (0 without one); the gateway writes the name in lower case, others may not. */
function contentLength(input: Buffer, start: number, end: number): number {
  let at = input.indexOf(CONTENT_LENGTH, start);
  if (at < 0 || at > end) {
    const match = /\r\ncontent-length: *(\d+)/i.exec(input.toString('latin1', start, end));
    return match === null ? 0 : Number(match[1]);
  }
  at += CONTENT_LENGTH.length;
  while (input[at] === 0x20) at++;
  let length = 0;
  for (let digit = input[at] - 0x30; digit >= 0 && digit <= 9; digit = input[++at] - 0x30) length = length * 10 + digit;
  return length;
}

function noCounts(): AlertCounts {
  return { alerts: 0, ids: 0, checked: 0, signed: 0, fresh: 0 };
}

function header(head: string, name: string): string {
  return new RegExp(`\\r\\n${name}: *([^\\r]*)`, 'i').exec(head)?.[1] ?? '';
}

function matches(received: string, expected: string): boolean {
  return received.length === expected.length && timingSafeEqual(Buffer.from(received, 'latin1'), Buffer.from(expected, 'latin1'));
}

function send(message: ChildMessage): void {
  process.send?.(message);
}

if (require.main === module) main();
