import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { HttpPipeline } from './alert-http-pipeline';
import { startEndlessChunkedReceiver } from '../../test/support/alert-receivers';

/** The pipelined POSTs of the alert providers, against real servers framing their answers every way HTTP/1.1 allows. */

const servers: Array<net.Server> = [];
const pipelines: HttpPipeline[] = [];

afterEach(async () => {
  for (const pipeline of pipelines.splice(0)) pipeline.close();
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function listen<T extends net.Server>(server: T): Promise<{ server: T; port: number }> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as net.AddressInfo).port };
}

function pipeline(url: string, timeoutMs = 5000, tls?: { ca: string }): HttpPipeline {
  const created = new HttpPipeline(new URL(url), { connections: 1, timeoutMs, tls });
  pipelines.push(created);
  return created;
}

/** An HTTP server recording the bodies it got and answering through `answer`. */
async function httpServer(answer: (request: http.IncomingMessage, response: http.ServerResponse, body: string) => void): Promise<{ port: number; bodies: string[]; sockets: Set<net.Socket> }> {
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
  const { port } = await listen(server);
  return { port, bodies, sockets };
}

/**
 * A raw TCP receiver: parses the requests of a connection (content-length framed) and writes what
 * `answer` returns for each; `end` closes the connection after that answer, unread requests dropped.
 */
async function rawServer(answer: (body: string, index: number) => { text: string; end: boolean }): Promise<{ port: number; bodies: string[] }> {
  const bodies: string[] = [];
  const server = net.createServer((socket) => {
    let input = '';
    let index = 0;
    let ended = false;
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      input += chunk.toString('latin1');
      for (;;) {
        const headEnd = input.indexOf('\r\n\r\n');
        if (ended || headEnd < 0) return;
        const length = Number(/content-length: *(\d+)/i.exec(input.slice(0, headEnd))?.[1] ?? 0);
        if (input.length < headEnd + 4 + length) return;
        const body = input.slice(headEnd + 4, headEnd + 4 + length);
        input = input.slice(headEnd + 4 + length);
        bodies.push(body);
        const { text, end } = answer(body, index++);
        if (end) {
          ended = true;
          socket.end(text);
        } else socket.write(text);
      }
    });
  });
  const { port } = await listen(server);
  return { port, bodies };
}

describe('HttpPipeline', () => {
  it('pipelines a burst over one keep-alive connection, bodies intact (UTF-8 included), statuses in order', async () => {
    const { port, bodies, sockets } = await httpServer((request, response, body) => {
      response.writeHead(body.includes(' 7"') ? 500 : 200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ echoed: body, path: request.url, signature: request.headers['x-signature'] }));
    });
    const sent = Array.from({ length: 10 }, (_, i) => `{"n":"é ✓ ${i}"}`);
    const shared = pipeline(`http://127.0.0.1:${port}`);
    const statuses = await Promise.all(sent.map((body) => shared.post('/hook?x=1', ['content-type: application/json', 'x-signature: abc'], body)));
    expect(statuses).toEqual(sent.map((_, i) => (i === 7 ? 500 : 200)));
    expect(sockets.size).toBe(1);
    expect(bodies).toEqual(sent);
  });

  it('reads chunked answers, answers without a body (204) and informational ones', async () => {
    const { port } = await httpServer((_request, response, body) => {
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
    const shared = pipeline(`http://127.0.0.1:${port}`);
    expect(await Promise.all(['chunked', 'empty', 'processing', 'chunked'].map((body) => shared.post('/', [], body)))).toEqual([202, 204, 200, 202]);
  });

  it('retires a connection the server closes (Connection: close, or a body ended by closing) and carries on over a new one', async () => {
    let served = 0;
    const server = net.createServer((socket) => {
      socket.once('data', () => {
        served++;
        // HTTP/1.0-style: no length, the body ends with the connection.
        socket.end(served % 2 === 1 ? 'HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nbye' : 'HTTP/1.1 201 Created\r\ncontent-type: text/plain\r\n\r\nuntil close');
      });
    });
    const { port } = await listen(server);
    const shared = pipeline(`http://127.0.0.1:${port}`);
    expect(await shared.post('/', [], 'a')).toBe(200);
    expect(await shared.post('/', [], 'b')).toBe(201);
    expect(await shared.post('/', [], 'c')).toBe(200);
  });

  it('delivers a burst to an HTTP/1.0 receiver that reads one request per connection, each once', async () => {
    const { port, bodies } = await rawServer(() => ({ text: 'HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nok', end: true }));
    const shared = pipeline(`http://127.0.0.1:${port}`);
    const sent = Array.from({ length: 10 }, (_, i) => `alert-${i}`);
    expect(await Promise.all(sent.map((body) => shared.post('/', [], body)))).toEqual(sent.map(() => 200));
    expect(bodies.sort()).toEqual(sent.sort());
  });

  it('delivers a burst to a receiver answering `Connection: close`, each once', async () => {
    const { port, bodies } = await httpServer((_request, response) => {
      response.writeHead(200, { connection: 'close', 'content-length': '2' });
      response.end('ok');
    });
    const shared = pipeline(`http://127.0.0.1:${port}`);
    const sent = Array.from({ length: 10 }, (_, i) => `alert-${i}`);
    expect(await Promise.all(sent.map((body) => shared.post('/', [], body)))).toEqual(sent.map(() => 200));
    expect(bodies.sort()).toEqual(sent.sort());
  });

  it('resends what a keep-alive receiver left unanswered when it closed after an answer, without failing it', async () => {
    // Keeps the connection for three answers (nginx's keepalive_requests, say), then closes it.
    const { port, bodies } = await rawServer((_body, index) => ({
      text: `HTTP/1.1 200 OK\r\ncontent-length: 0\r\n${index === 2 ? 'connection: close\r\n' : ''}\r\n`,
      end: index === 2,
    }));
    const shared = pipeline(`http://127.0.0.1:${port}`);
    const sent = Array.from({ length: 20 }, (_, i) => `alert-${i}`);
    expect(await Promise.all(sent.map((body) => shared.post('/', [], body)))).toEqual(sent.map(() => 200));
    expect(bodies.sort()).toEqual(sent.sort());
  });

  it('fails what is in flight when the connection drops, and what waits when the receiver is unreachable', async () => {
    const server = net.createServer((socket) => socket.once('data', () => socket.destroy()));
    const { port } = await listen(server);
    await expect(pipeline(`http://127.0.0.1:${port}`).post('/', [], 'x')).rejects.toThrow(/connection closed before the response/);
    const closed = await listen(net.createServer());
    await new Promise((resolve) => closed.server.close(resolve));
    servers.pop();
    await expect(pipeline(`http://127.0.0.1:${closed.port}`).post('/', [], 'x')).rejects.toThrow(/ECONNREFUSED/);
  });

  it('discards a chunked answer as it arrives and drops a connection whose answer runs past the cap', async () => {
    const receiver = await startEndlessChunkedReceiver();
    const started = Date.now();
    try {
      expect(await pipeline(`http://127.0.0.1:${receiver.port}`).post('/', [], 'x')).toBe(200);
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await receiver.close();
    }
  });

  it('keeps a connection whose chunked answers stay under the cap', async () => {
    const { port, sockets } = await httpServer((_request, response) => {
      response.writeHead(200, { 'transfer-encoding': 'chunked' });
      response.write('a'.repeat(300 * 1024));
      response.end('b'.repeat(300 * 1024));
    });
    const shared = pipeline(`http://127.0.0.1:${port}`);
    expect(await Promise.all([1, 2, 3].map(() => shared.post('/', [], 'x')))).toEqual([200, 200, 200]);
    expect(sockets.size).toBe(1);
  });

  it('gives up on a receiver that does not answer in time', async () => {
    const { port } = await httpServer(() => undefined);
    await expect(pipeline(`http://127.0.0.1:${port}`, 300).post('/', [], 'x')).rejects.toThrow(/no answer within 300 ms/);
  });

  it('gives up on a receiver that answers a byte at a time: the timeout is a deadline, not an idle timer', async () => {
    const drips: NodeJS.Timeout[] = [];
    const { port } = await rawServer(() => ({ text: 'HTTP/1.1 200 OK\r\ncontent-length: 1000000\r\n\r\n', end: false }));
    const server = servers[servers.length - 1];
    server.on('connection', (socket: net.Socket) => drips.push(setInterval(() => socket.writable && socket.write('x'), 50)));
    const started = Date.now();
    try {
      await expect(pipeline(`http://127.0.0.1:${port}`, 400).post('/', [], 'x')).rejects.toThrow(/no answer within 400 ms/);
      expect(Date.now() - started).toBeLessThan(1500);
    } finally {
      for (const drip of drips) clearInterval(drip);
    }
  });

  it('times out each request on its own while new requests keep the connection busy', async () => {
    // Answers the first request (so the connection is known to stay open), then nothing.
    const { port } = await rawServer((_body, index) => ({ text: index === 0 ? 'HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n' : '', end: false }));
    const shared = pipeline(`http://127.0.0.1:${port}`, 400);
    expect(await shared.post('/', [], 'first')).toBe(200);
    const started = Date.now();
    const hung = shared.post('/', [], 'hung').then(
      () => 'answered',
      (error: Error) => `${error.message} after ${Date.now() - started} ms`,
    );
    const others: Array<Promise<unknown>> = [];
    const stream = setInterval(() => others.push(shared.post('/', [], 'more').catch(() => undefined)), 50);
    try {
      expect(await hung).toMatch(/no answer within 400 ms after (3|4|5|6|7)\d\d ms/);
    } finally {
      clearInterval(stream);
    }
    await Promise.all(others);
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
    const { port } = await listen(server);
    const ca = fs.readFileSync(cert, 'utf8');
    expect(await pipeline(`https://localhost:${port}`, 5000, { ca }).post('/', [], 'x')).toBe(200);
    await expect(pipeline(`https://localhost:${port}`).post('/', [], 'x')).rejects.toThrow(/self[- ]signed|certificate/i);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
