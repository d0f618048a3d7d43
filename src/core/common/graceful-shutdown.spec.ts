import http, { IncomingMessage, Server, ServerResponse } from 'node:http';
import net, { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { INestApplication } from '@nestjs/common';
import pino from 'pino';
import { GracefulShutdown } from './graceful-shutdown';

/**
 * GracefulShutdown on a real node:http server and real sockets. The Nest app is reduced to the
 * two methods the class uses (its server and `close`); the e2e suite (test/shutdown.e2e-spec.ts)
 * runs the whole gateway process.
 */

interface Harness {
  server: Server;
  port: number;
  shutdown: GracefulShutdown;
  exits: number[];
  events: string[];
  logs: Array<{ level: string; msg: string }>;
  /** Requests held by the server until released. */
  held: Array<(body?: string) => void>;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

interface HarnessOptions {
  timeoutMs?: number;
  close?: () => Promise<void>;
  /** Answers the requests; by default each is held in `held` until released. */
  handler?: (request: IncomingMessage, response: ServerResponse) => void;
}

async function harness({ timeoutMs = 5_000, close = async () => undefined, handler }: HarnessOptions = {}): Promise<Harness> {
  const held: Harness['held'] = [];
  const server = http.createServer(handler ?? ((_request, response) => held.push((body = 'done') => response.end(body))));
  server.keepAliveTimeout = 65_000;
  servers.push(server);
  const events: string[] = [];
  const logs: Harness['logs'] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logs.push(JSON.parse(chunk.toString()) as { level: string; msg: string });
      callback();
    },
  });
  const logger = pino({ formatters: { level: (label) => ({ level: label }) } }, sink);
  const app = {
    getHttpServer: () => server,
    close: async () => {
      events.push(`app.close (server listening: ${server.listening})`);
      await close();
    },
  } as unknown as INestApplication;
  const exits: number[] = [];
  const shutdown = new GracefulShutdown(app, logger, timeoutMs, (code) => {
    events.push(`exit ${code}`);
    exits.push(code);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, shutdown, exits, events, logs, held };
}

interface Answer {
  status: number;
  connection: string | undefined;
  body: string;
  socket: net.Socket;
}

function get(port: number, agent: http.Agent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path: '/', agent }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, connection: response.headers.connection, body, socket: request.socket! }));
    });
    request.on('error', reject);
  });
}

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function closed(socket: net.Socket): Promise<void> {
  return socket.destroyed ? Promise.resolve() : new Promise((resolve) => socket.once('close', () => resolve()));
}

describe('GracefulShutdown', () => {
  it('closes idle keep-alive connections at once, answers the request in flight with Connection: close, then closes the app and exits 0', async () => {
    const h = await harness();
    const agent = new http.Agent({ keepAlive: true });
    const warm = Promise.all([get(h.port, agent), get(h.port, agent)]);
    await until(() => h.held.length === 2);
    h.held.splice(0).forEach((release) => release());
    const [first, second] = await warm;
    expect([first.connection, second.connection]).toEqual(['keep-alive', 'keep-alive']);

    const inFlight = get(h.port, agent);
    await until(() => h.held.length === 1);
    const idle = (Object.values(agent.freeSockets).flat() as net.Socket[])[0];
    const done = h.shutdown.shutdown('SIGTERM');
    await closed(idle);
    expect(h.events).toEqual([]);

    h.held[0]('last');
    expect(await inFlight).toMatchObject({ status: 200, connection: 'close', body: 'last' });
    await done;
    expect(h.events).toEqual(['app.close (server listening: false)', 'exit 0']);
    expect(h.logs.map((line) => line.msg)).toEqual(['shutting down: answering the requests in flight', 'shutdown complete']);
    agent.destroy();
  });

  it('answers a request that arrives on an open connection during the shutdown with Connection: close', async () => {
    const h = await harness();
    const socket = net.connect(h.port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    // Half a request before the signal: the connection is busy, so it is not closed as idle.
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const done = h.shutdown.shutdown('SIGTERM');
    socket.write('\r\n');
    await until(() => h.held.length === 1);
    h.held[0]();
    let raw = '';
    socket.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    await closed(socket);
    expect(raw).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(raw.toLowerCase()).toContain('connection: close\r\n');
    await done;
    expect(h.exits).toEqual([0]);
  });

  it('ends a connection whose answer had its headers written before the signal, once that answer is complete', async () => {
    let finish: (() => void) | null = null;
    const h = await harness({
      handler: (_request, response) => {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.write('first part;');
        finish = () => response.end('second part');
      },
    });
    const agent = new http.Agent({ keepAlive: true });
    const answer = get(h.port, agent);
    await until(() => finish !== null);
    const done = h.shutdown.shutdown('SIGTERM');
    finish!();
    const { body, connection, socket } = await answer;
    expect({ body, connection }).toEqual({ body: 'first part;second part', connection: 'keep-alive' });
    await closed(socket);
    await done;
    expect(h.exits).toEqual([0]);
    agent.destroy();
  });

  it('exits 1 with an error line when a request is still in flight at the bound', async () => {
    const h = await harness({ timeoutMs: 200 });
    const agent = new http.Agent({ keepAlive: true });
    const stuck = get(h.port, agent).catch((error: Error) => error);
    await until(() => h.held.length === 1);
    const started = Date.now();
    void h.shutdown.shutdown('SIGTERM');
    await until(() => h.exits.length > 0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(h.exits).toEqual([1]);
    expect(h.events).toEqual(['exit 1']);
    expect(h.logs.at(-1)).toMatchObject({ level: 'error', msg: expect.stringContaining('shutdown not finished within SHUTDOWN_TIMEOUT_MS'), connections: 1 });
    h.server.closeAllConnections();
    expect(await stuck).toMatchObject({ code: 'ECONNRESET' });
    agent.destroy();
  });

  it('exits 1 when closing the app fails, and ignores a second signal', async () => {
    const h = await harness({
      close: async () => {
        throw new Error('database gone');
      },
    });
    await Promise.all([h.shutdown.shutdown('SIGTERM'), h.shutdown.shutdown('SIGINT')]);
    expect(h.exits).toEqual([1]);
    expect(h.logs.filter((line) => line.msg === 'shutting down: answering the requests in flight')).toHaveLength(1);
    expect(h.logs.at(-1)).toMatchObject({ level: 'error', msg: 'shutdown failed' });
  });
});
