import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { AlertHttpClient, retryAfterMs } from './alert-http';
import { AlertSendError } from './alert-provider';
import { startEndlessChunkedReceiver } from '../../../test/support/alert-receivers';

/** The alert providers' POSTs (undici) against real servers answering every way the README's delivery rules name. */

const servers: net.Server[] = [];
const clients: AlertHttpClient[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function listen<T extends net.Server>(server: T): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

function client(options: ConstructorParameters<typeof AlertHttpClient>[0] = {}): AlertHttpClient {
  const created = new AlertHttpClient(options);
  clients.push(created);
  return created;
}

/** What a POST came to: 'sent', or the AlertSendError's message. */
function outcome(sending: Promise<void>): Promise<string> {
  return sending.then(
    () => 'sent',
    (error: Error) => error.message,
  );
}

/** An HTTP server recording the bodies it got and answering through `answer`. */
async function httpServer(answer: (request: http.IncomingMessage, response: http.ServerResponse, body: string) => void): Promise<{ url: string; bodies: string[]; sockets: Set<net.Socket> }> {
  const bodies: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      bodies.push(body);
      answer(request, response, body);
    });
  });
  server.on('connection', (socket) => sockets.add(socket));
  return { url: `http://127.0.0.1:${await listen(server)}`, bodies, sockets };
}

/** A raw TCP receiver answering each request (content-length framed) with `answer`'s text; `end` closes the connection after it. */
async function rawServer(answer: (index: number) => { text: string; end: boolean }): Promise<{ url: string; bodies: string[] }> {
  const bodies: string[] = [];
  let index = 0;
  const server = net.createServer((socket) => {
    let input = '';
    let ended = false;
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      input += chunk.toString('latin1');
      for (;;) {
        const headEnd = input.indexOf('\r\n\r\n');
        if (ended || headEnd < 0) return;
        const length = Number(/content-length: *(\d+)/i.exec(input.slice(0, headEnd))?.[1] ?? 0);
        if (input.length < headEnd + 4 + length) return;
        bodies.push(input.slice(headEnd + 4, headEnd + 4 + length));
        input = input.slice(headEnd + 4 + length);
        const { text, end } = answer(index++);
        if (end) {
          ended = true;
          socket.end(text);
        } else socket.write(text);
      }
    });
  });
  return { url: `http://127.0.0.1:${await listen(server)}`, bodies };
}

describe('AlertHttpClient', () => {
  it('posts a burst over a few keep-alive connections, bodies and headers intact (UTF-8 included); a 2xx is sent, anything else fails naming the status', async () => {
    const seen: Array<string | string[] | undefined> = [];
    const { url, bodies, sockets } = await httpServer((request, response, body) => {
      seen.push(request.headers['x-signature']);
      response.writeHead(body.includes(' 7"') ? 500 : 200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ echoed: body }));
    });
    const sent = Array.from({ length: 20 }, (_, i) => `{"n":"é ✓ ${i}"}`);
    const shared = client();
    const outcomes = await Promise.all(sent.map((body) => outcome(shared.post(new URL(`${url}/hook?x=1`), { 'content-type': 'application/json', 'x-signature': 'abc' }, body))));
    expect(outcomes).toEqual(sent.map((_, i) => (i === 7 ? 'POST http://127.0.0.1:' + new URL(url).port + '/*** answered 500' : 'sent')));
    expect(bodies.sort()).toEqual([...sent].sort());
    expect(seen.every((value) => value === 'abc')).toBe(true);
    expect(sockets.size).toBeLessThanOrEqual(4);
  });

  it('reads chunked answers, answers without a body (204) and after an informational one', async () => {
    const { url } = await httpServer((_request, response, body) => {
      if (body === 'chunked') {
        response.writeHead(202, { 'transfer-encoding': 'chunked' });
        response.write('first part,');
        response.write('x'.repeat(5000));
        response.end('last');
      } else if (body === 'empty') {
        response.writeHead(204);
        response.end();
      } else {
        response.writeProcessing();
        response.writeHead(200, { 'content-length': '2' });
        response.end('ok');
      }
    });
    const shared = client();
    expect(await Promise.all(['chunked', 'empty', 'processing', 'chunked'].map((body) => outcome(shared.post(new URL(url), {}, body))))).toEqual(['sent', 'sent', 'sent', 'sent']);
  });

  it('delivers a burst, each once, to a receiver that reads one request per connection (HTTP/1.0) or answers `Connection: close`', async () => {
    const http10 = await rawServer(() => ({ text: 'HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nok', end: true }));
    const closing = await httpServer((_request, response) => {
      response.writeHead(200, { connection: 'close', 'content-length': '2' });
      response.end('ok');
    });
    const sent = Array.from({ length: 10 }, (_, i) => `alert-${i}`);
    for (const receiver of [http10, closing]) {
      const shared = client();
      expect(await Promise.all(sent.map((body) => outcome(shared.post(new URL(receiver.url), {}, body))))).toEqual(sent.map(() => 'sent'));
      expect([...receiver.bodies].sort()).toEqual([...sent].sort());
    }
  });

  it('carries on over a new connection when a keep-alive receiver closes one after some answers', async () => {
    // Keeps a connection for three answers (nginx's keepalive_requests, say), then closes it.
    const { url, bodies } = await rawServer((index) => ({ text: `HTTP/1.1 200 OK\r\ncontent-length: 0\r\n${index % 3 === 2 ? 'connection: close\r\n' : ''}\r\n`, end: index % 3 === 2 }));
    const shared = client();
    const sent = Array.from({ length: 20 }, (_, i) => `alert-${i}`);
    expect(await Promise.all(sent.map((body) => outcome(shared.post(new URL(url), {}, body))))).toEqual(sent.map(() => 'sent'));
    expect([...bodies].sort()).toEqual([...sent].sort());
  });

  it('does not follow a redirect: a 3xx fails the attempt', async () => {
    const { url, bodies } = await httpServer((request, response) => {
      response.writeHead(request.url === '/moved' ? 307 : 200, { location: '/new' });
      response.end();
    });
    expect(await outcome(client().post(new URL(`${url}/moved`), {}, 'x'))).toMatch(/answered 307$/);
    expect(bodies).toHaveLength(1);
  });

  it('fails when the connection drops before the answer, and when the receiver is unreachable', async () => {
    const dropping = await listen(net.createServer((socket) => socket.once('data', () => socket.destroy())));
    expect(await outcome(client().post(new URL(`http://127.0.0.1:${dropping}/`), {}, 'x'))).toMatch(/^POST http:\/\/127\.0\.0\.1:\d+\/ failed: /);
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await outcome(client().post(new URL(`http://127.0.0.1:${port}/`), {}, 'x'))).toMatch(/ECONNREFUSED|connect/);
  });

  it('takes the status of an endless chunked answer and drops the connection past the 1 MiB cap', async () => {
    const receiver = await startEndlessChunkedReceiver();
    const started = Date.now();
    try {
      expect(await outcome(client().post(new URL(`http://127.0.0.1:${receiver.port}/`), {}, 'x'))).toBe('sent');
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await receiver.close();
    }
  });

  it('keeps a connection whose answers stay under the cap', async () => {
    const { url, sockets } = await httpServer((_request, response) => {
      response.writeHead(200, { 'transfer-encoding': 'chunked' });
      response.write('a'.repeat(300 * 1024));
      response.end('b'.repeat(300 * 1024));
    });
    const shared = client();
    for (let i = 0; i < 3; i++) expect(await outcome(shared.post(new URL(url), {}, 'x'))).toBe('sent');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect([...sockets].filter((socket) => !socket.destroyed)).toHaveLength(sockets.size);
  });

  it('gives up on a receiver that does not answer in time', async () => {
    const { url } = await httpServer(() => undefined);
    expect(await outcome(client({ timeoutMs: 300 }).post(new URL(url), {}, 'x'))).toMatch(/failed: no answer within 300 ms$/);
  });

  it('gives up on a receiver that sends its answer a byte at a time: the timeout is a deadline, not an idle timer', async () => {
    const drips: NodeJS.Timeout[] = [];
    const port = await listen(
      net.createServer((socket) => {
        socket.on('error', () => undefined);
        // Read (and ignore) the request, so the client's closing is seen and the server can close.
        socket.resume();
        const head = 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok';
        let at = 0;
        drips.push(setInterval(() => socket.writable && at < head.length && socket.write(head[at++]), 50));
      }),
    );
    const started = Date.now();
    try {
      expect(await outcome(client({ timeoutMs: 400 }).post(new URL(`http://127.0.0.1:${port}/`), {}, 'x'))).toMatch(/no answer within 400 ms/);
      expect(Date.now() - started).toBeLessThan(1500);
    } finally {
      for (const drip of drips) clearInterval(drip);
    }
  });

  it('times out each request on its own while new requests keep the connection busy', async () => {
    // Answers the first request (so the connection is known to stay open, and requests are pipelined), then nothing.
    const { url } = await rawServer((index) => ({ text: index === 0 ? 'HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n' : '', end: false }));
    const shared = client({ timeoutMs: 400 });
    expect(await outcome(shared.post(new URL(url), {}, 'first'))).toBe('sent');
    const started = Date.now();
    const hung = outcome(shared.post(new URL(url), {}, 'hung')).then((result) => `${result} after ${Date.now() - started} ms`);
    const others: Array<Promise<string>> = [];
    const stream = setInterval(() => others.push(outcome(shared.post(new URL(url), {}, 'more'))), 50);
    try {
      expect(await hung).toMatch(/no answer within 400 ms after (3|4|5|6|7)\d\d ms/);
    } finally {
      clearInterval(stream);
    }
    await Promise.all(others);
  });

  it('pipelines to a receiver that has answered without closing the connection', async () => {
    // How many requests each read brought: more than one were written before the answers to those ahead.
    const reads: number[] = [];
    const port = await listen(
      net.createServer((socket) => {
        socket.on('error', () => undefined);
        socket.on('data', (chunk: Buffer) => {
          const requests = chunk.toString('latin1').split('POST ').length - 1;
          reads.push(requests);
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'.repeat(requests));
        });
      }),
    );
    const shared = client();
    const url = new URL(`http://127.0.0.1:${port}/`);
    expect(await outcome(shared.post(url, {}, 'first'))).toBe('sent');
    expect(reads).toEqual([1]);
    const burst = await Promise.all(Array.from({ length: 40 }, () => outcome(shared.post(url, {}, 'x'))));
    expect(burst.every((result) => result === 'sent')).toBe(true);
    expect(Math.max(...reads)).toBeGreaterThan(1);
  });

  it('hands a 429’s Retry-After (seconds or an HTTP date) to the caller with the status', async () => {
    const { url } = await httpServer((request, response) => {
      response.writeHead(429, { 'retry-after': request.url === '/date' ? new Date(Date.now() + 3000).toUTCString() : '7' });
      response.end();
    });
    const shared = client();
    const seconds = await shared.post(new URL(`${url}/seconds`), {}, 'x').catch((error: AlertSendError) => error);
    expect(seconds).toMatchObject({ status: 429, retryAfterMs: 7000 });
    const date = await shared.post(new URL(`${url}/date`), {}, 'x').catch((error: AlertSendError) => error);
    expect(date).toMatchObject({ status: 429 });
    expect((date as AlertSendError).retryAfterMs).toBeGreaterThan(1000);
    expect((date as AlertSendError).retryAfterMs).toBeLessThanOrEqual(3000);
  });

  it('speaks HTTPS, checking the certificate', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'alert-tls-'));
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { stdio: 'ignore' });
    const server = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (request, response) => {
      request.resume();
      request.on('end', () => response.end('secure'));
    });
    const port = await listen(server);
    const ca = fs.readFileSync(cert, 'utf8');
    expect(await outcome(client({ tls: { ca } }).post(new URL(`https://localhost:${port}/`), {}, 'x'))).toBe('sent');
    expect(await outcome(client().post(new URL(`https://localhost:${port}/`), {}, 'x'))).toMatch(/self[- ]signed|certificate/i);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('retryAfterMs', () => {
  it('reads seconds and HTTP dates, counting a date from now, and ignores what it cannot read', () => {
    const now = Date.parse('2026-11-25T02:00:00Z');
    expect(retryAfterMs('120', now)).toBe(120_000);
    expect(retryAfterMs('Wed, 25 Nov 2026 02:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Wed, 25 Nov 2026 01:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs(['5', '9'], now)).toBe(5000);
    for (const unreadable of [undefined, '', 'soon']) expect(retryAfterMs(unreadable, now)).toBeNull();
  });
});
