/**
 * The alerting benchmark's webhook receiver. It counts the alerts it receives (requests with
 * `X-Service-Event: alert`), their distinct ids, and verifies the signature of every one
 * (HMAC-SHA256 of the raw body with BENCH_ALERT_SECRET, compared in constant time), as a
 * receiver following the README does. It shares the machine's cores with the gateway it
 * measures, so it reads HTTP/1.1 off the socket itself (Content-Length framing, pipelined
 * requests answered in one write) rather than through node:http: measured with the same
 * alerts, node:http with the same checks spent about 16 µs of CPU per alert against about 5 µs
 * here, CPU a receiver on its own machine would not take from the gateway. Runs as its own
 * process (child_process.fork) and reports its port and counts over IPC (`count`, `reset`).
 */
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { ChildMessage, ParentMessage } from './messages';

const RESPONSE = 'HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n';

function main(): void {
  const key = createSecretKey(Buffer.from(process.env.BENCH_ALERT_SECRET ?? ''));
  const counts = { alerts: 0, checked: 0, signed: 0 };
  const ids = new Set<string>();

  /** One request: its head (without the final empty line) and its body, as latin1 text (one char per byte). */
  const received = (head: string, body: string): void => {
    if (!/\r\nx-service-event: *alert/i.test(head)) return;
    counts.alerts++;
    // The id sits near the start of the body: `{"event":"service.alert","version":"1.0","id":"alert_…"`.
    const id = /"id":"(alert_[0-9a-f]+)"/.exec(body.slice(0, 120))?.[1];
    if (id !== undefined) ids.add(id);
    counts.checked++;
    const signature = /\r\nx-service-signature: *([^\r]*)/i.exec(head)?.[1] ?? '';
    const expected = `sha256=${createHmac('sha256', key).update(body, 'latin1').digest('hex')}`;
    if (signature.length === expected.length && timingSafeEqual(Buffer.from(signature, 'latin1'), Buffer.from(expected, 'latin1'))) counts.signed++;
  };

  const server = net.createServer((socket) => {
    let input = '';
    socket.on('data', (chunk: Buffer) => {
      input += chunk.toString('latin1');
      let answered = 0;
      for (;;) {
        const headEnd = input.indexOf('\r\n\r\n');
        if (headEnd < 0) break;
        const head = input.slice(0, headEnd);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        const bodyStart = headEnd + 4;
        if (input.length < bodyStart + length) break;
        received(head, input.slice(bodyStart, bodyStart + length));
        input = input.slice(bodyStart + length);
        answered++;
      }
      if (answered > 0) socket.write(RESPONSE.repeat(answered));
    });
    socket.on('error', () => socket.destroy());
  });
  server.listen(0, '127.0.0.1', () => send({ type: 'listening', port: (server.address() as AddressInfo).port }));
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'reset') {
      counts.alerts = counts.checked = counts.signed = 0;
      ids.clear();
    }
    send({ type: 'alerts', alerts: counts.alerts, ids: ids.size, checked: counts.checked, signed: counts.signed });
  });
  process.on('disconnect', () => process.exit(0));
}

function send(message: ChildMessage): void {
  process.send?.(message);
}

if (require.main === module) main();
