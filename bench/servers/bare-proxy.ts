/**
 * The Node.js ceiling for a reverse proxy: a node:http server forwarding every request to
 * UPSTREAM_URL over an undici Pool (`pool.stream`), with no authentication, policy or audit.
 * `/proxy/<rest>` is forwarded as `/<rest>`, like the gateway does. Runs as its own process
 * (child_process.fork) and reports its port over IPC.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Dispatcher, Pool } from 'undici';
import type { ChildMessage } from './messages';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'host', 'proxy-connection', 'te', 'trailer']);

function withoutHopByHop(headers: http.IncomingHttpHeaders): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name)) kept[name] = value;
  }
  return kept;
}

function main(): void {
  const upstream = new URL(process.env.UPSTREAM_URL ?? 'http://127.0.0.1:1');
  const pool = new Pool(upstream.origin, { connections: 256, keepAliveTimeout: 30_000 });
  const server = http.createServer((request, response) => {
    const url = request.url ?? '/';
    pool
      .stream(
        {
          path: url.startsWith('/proxy/') ? url.slice('/proxy'.length) : url,
          method: (request.method ?? 'GET') as Dispatcher.HttpMethod,
          headers: { ...withoutHopByHop(request.headers), host: upstream.host },
          body: request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined ? request : undefined,
        },
        ({ statusCode, headers }) => {
          response.writeHead(statusCode, withoutHopByHop(headers));
          return response;
        },
      )
      .catch(() => {
        if (response.headersSent) response.destroy();
        else response.writeHead(502).end();
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
