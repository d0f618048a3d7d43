import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { pathOf } from '../common/raw-request';

/** A route served on the lean path, ahead of express. */
export interface LeanRoute {
  /** True when the route serves this request (`path`: the URL without its query). */
  matches(request: IncomingMessage, path: string): boolean;
  /** Serves it; never throws. */
  handle(request: IncomingMessage, response: ServerResponse, path: string): void;
}

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * Puts an app's lean routes in front of express on its own HTTP server, first match wins;
 * express answers everything else. Nest still owns the server (listen, close, shutdown hooks).
 * Express's router and body handling alone cost more than a decision (docs/architecture.md,
 * "The lean path"),
 * so the hot routes (the proxy, the PDP, the sidecar's `/enforce`) are served here.
 */
export function mountLeanRoutes(app: INestApplication, routes: readonly LeanRoute[]): void {
  const server = app.getHttpServer() as Server;
  const [express] = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const path = pathOf(request.url);
    for (const route of routes) if (route.matches(request, path)) return route.handle(request, response, path);
    express(request, response);
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
}
