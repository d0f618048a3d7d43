import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { pathOf } from '../common/raw-request';

/** A route served on the lean path, ahead of express. */
export interface LeanRoute {
  /** True when the route serves this request (`path`: the URL without its query). */
  matches(request: IncomingMessage, path: string): boolean;
  /** Serves it; never throws. */
  handle(request: IncomingMessage, response: ServerResponse, path: string): void;
  /** The route's name in metrics and request logs, for a path it matches: one of a fixed few, never the caller's path. */
  name(path: string): string;
}

/**
 * Hears every request the server takes, lean or not, as it arrives (the metrics and request logs
 * of src/core/telemetry): `route` is the lean route serving it, null when express does.
 */
export interface RequestObserver {
  arrived(request: IncomingMessage, response: ServerResponse, route: LeanRoute | null, path: string): void;
}

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * Puts an app's lean routes in front of express on its own HTTP server, first match wins;
 * express answers everything else. Nest still owns the server (listen, close, shutdown hooks).
 * Express's router and body handling alone cost more than a decision (docs/architecture.md,
 * "The lean path"),
 * so the hot routes (the proxy, the PDP, the sidecar's `/enforce`) are served here. `observer`,
 * when given, hears of each request first.
 */
export function mountLeanRoutes(app: INestApplication, routes: readonly LeanRoute[], observer?: RequestObserver): void {
  const server = app.getHttpServer() as Server;
  const [express] = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  const listener =
    observer === undefined
      ? (request: IncomingMessage, response: ServerResponse) => {
          const path = pathOf(request.url);
          for (const route of routes) if (route.matches(request, path)) return route.handle(request, response, path);
          express(request, response);
        }
      : (request: IncomingMessage, response: ServerResponse) => {
          const path = pathOf(request.url);
          for (const route of routes) {
            if (!route.matches(request, path)) continue;
            observer.arrived(request, response, route, path);
            return route.handle(request, response, path);
          }
          observer.arrived(request, response, null, path);
          express(request, response);
        };
  server.on('request', listener);
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
}
