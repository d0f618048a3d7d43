/**
 * The Node.js ceiling for `POST /v1/check`: a node:http server that reads and parses the JSON
 * body and answers (JSON.stringify) the gateway's own answer to the same request, looked up by its
 * action in BENCH_CHECK_ANSWERS: the same body and headers, without authentication, policy or audit.
 * Runs as its own process (child_process.fork) and reports its port over IPC.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChildMessage } from './messages';

function main(): void {
  const answers = new Map(Object.entries(JSON.parse(process.env.BENCH_CHECK_ANSWERS ?? '{}') as Record<string, { traceId: string }>));
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { action?: string };
      const answer = answers.get(body.action ?? '');
      if (answer === undefined) {
        response.writeHead(404).end();
        return;
      }
      const payload = JSON.stringify(answer);
      response.writeHead(200, { 'X-Trace-ID': answer.traceId, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(payload) });
      response.end(payload);
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    process.send?.({ type: 'listening', port } satisfies ChildMessage);
  });
  process.on('disconnect', () => process.exit(0));
}

if (require.main === module) main();
