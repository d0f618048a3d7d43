import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { isProxyUrl } from './proxy-path';
import { ProxyHandler } from './proxy-handler';

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * Puts the proxy's lean path in front of express on the app's own HTTP server: `/proxy/*` goes
 * to ProxyHandler, everything else to express as before. Nest still owns the server (listen,
 * close, shutdown hooks).
 */
export function mountProxy(app: INestApplication): void {
  const server = app.getHttpServer() as Server;
  const handler = app.get(ProxyHandler);
  const [express] = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (isProxyUrl(request.url)) handler.handle(request, response);
    else express(request, response);
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
}
