/**
 * The benchmark's upstream: a node:http server answering every request with the same ~100-byte
 * JSON body. Runs as its own process (child_process.fork), listens on an ephemeral loopback port
 * and reports it over IPC; it also counts the requests it served (IPC `count`, `reset`), so the
 * bench can cross-check what a proxy forwarded.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChildMessage, ParentMessage } from './messages';

export const UPSTREAM_BODY = Buffer.from(
  JSON.stringify({ id: 'itm_000123', name: 'bench item', price: 12.5, currency: 'EUR', tags: ['a', 'b'], inStock: true }),
);

const HEADERS = { 'content-type': 'application/json', 'content-length': String(UPSTREAM_BODY.length) };

function main(): void {
  let served = 0;
  const server = http.createServer((request, response) => {
    served++;
    request.resume();
    response.writeHead(200, HEADERS);
    response.end(UPSTREAM_BODY);
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    send({ type: 'listening', port });
  });
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'count') send({ type: 'count', served });
    else if (message.type === 'reset') {
      served = 0;
      send({ type: 'count', served });
    }
  });
  process.on('disconnect', () => process.exit(0));
}

function send(message: ChildMessage): void {
  process.send?.(message);
}

if (require.main === module) main();
