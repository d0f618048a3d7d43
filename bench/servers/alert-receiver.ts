/**
 * The alerting benchmark's webhook receiver: a node:http server that answers every POST 200 and
 * counts the alerts it received (requests with `X-Service-Event: alert`) and how many of them
 * carried a valid signature (HMAC-SHA256 of the raw body with BENCH_ALERT_SECRET). Runs as its
 * own process (child_process.fork) and reports its port and counts over IPC (`count`, `reset`).
 */
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChildMessage, ParentMessage } from './messages';

function main(): void {
  const secret = process.env.BENCH_ALERT_SECRET ?? '';
  let alerts = 0;
  let signed = 0;
  const ids = new Set<string>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.headers['x-service-event'] === 'alert') {
        alerts++;
        const body = Buffer.concat(chunks);
        if (request.headers['x-service-signature'] === `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`) signed++;
        // The id sits near the start of the body: `{"event":"service.alert","version":"1.0","id":"alert_…"`.
        const id = /"id":"(alert_[0-9a-f]+)"/.exec(body.toString('latin1', 0, 120))?.[1];
        if (id !== undefined) ids.add(id);
      }
      response.writeHead(200, { 'content-length': '0' });
      response.end();
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => send({ type: 'listening', port: (server.address() as AddressInfo).port }));
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'reset') {
      alerts = 0;
      signed = 0;
      ids.clear();
    }
    send({ type: 'alerts', alerts, signed, ids: ids.size });
  });
  process.on('disconnect', () => process.exit(0));
}

function send(message: ChildMessage): void {
  process.send?.(message);
}

if (require.main === module) main();
