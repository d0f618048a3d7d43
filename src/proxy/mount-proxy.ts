import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { LEAN_PDP_PATHS, PdpHttpHandler } from '../pdp/pdp-http.handler';
import { isProxyUrl } from './proxy-path';
import { ProxyHandler } from './proxy-handler';
import { pathOf } from '../common/raw-request';

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * Puts the lean paths in front of express on the app's own HTTP server: `/proxy/*` goes to
 * ProxyHandler, `/v1/check` and `/api/v1/pdp/evaluate` to PdpHttpHandler, everything else to
 * express as before. Nest still owns the server (listen, close, shutdown hooks).
 */
export function mountProxy(app: INestApplication): void {
  const server = app.getHttpServer() as Server;
  const proxy = app.get(ProxyHandler);
  const pdp = app.get(PdpHttpHandler);
  const [express] = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (isProxyUrl(request.url)) return proxy.handle(request, response);
    const path = pathOf(request.url);
    if (LEAN_PDP_PATHS.has(path)) return pdp.handle(request, response, path);
    express(request, response);
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
}
