/**
 * The sidecar bench's ceiling: a bare node:http server that reads a POST body and answers a
 * JSON body of BODY_BYTES bytes (the size of a sidecar /enforce answer). Forked by the bench;
 * reports its port over IPC.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChildMessage } from './messages';

function main(): void {
  const size = Number(process.env.BODY_BYTES ?? 200);
  const filler = 'x'.repeat(Math.max(0, size - '{"decision":"allow","pad":""}'.length));
  const body = Buffer.from(JSON.stringify({ decision: 'allow', pad: filler }));
  const headers = { 'content-type': 'application/json; charset=utf-8', 'content-length': String(body.length) };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
      response.writeHead(200, headers);
      response.end(body);
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => send({ type: 'listening', port: (server.address() as AddressInfo).port }));
  process.on('disconnect', () => process.exit(0));
}

function send(message: ChildMessage): void {
  process.send?.(message);
}

main();
