import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { knownTraceId } from '../common/raw-request';
import type { TelemetrySettings } from '../config/shared-settings';
import type { LeanRoute, RequestObserver } from '../http/lean-routes';
import type { AccessLog } from '../logging/logger';
import type { Sample, ServiceMetrics } from './service-metrics';

/** Methods counted by name; any other is counted as `other`, so callers cannot add label values. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const OTHER_METHOD = METHODS.length;
/** Status recorded for a request whose client went away before its answer was complete (nginx's convention, as the audit trail has it). */
const CLIENT_CLOSED = 499;
/** Lean routes that are not requests of the service's users: no request log line for them. */
const PROBE_ROUTES: ReadonlySet<string> = new Set(['/health', '/health/ready', '/metrics']);
/** The route name of a request express answered without a route of the app (a 404). */
const UNMATCHED = 'unmatched';

/**
 * What the HTTP server tells of each request (mountLeanRoutes' RequestObserver), when it ends:
 * - `agentgov_http_requests_total{route, method, status}`: the route is the lean route's name or
 *   the Nest route's pattern (`/admin/agents/:id`), never the caller's path;
 * - one request log line (level `access`, LOG_REQUESTS) per proxied, PDP, MCP and `/enforce`
 *   request: method, path without its query, route, status, duration, trace id;
 * - a warning for any request answered slower than SLOW_REQUEST_MS.
 * A request whose client went away before its answer was complete counts as 499.
 */
export class RequestTelemetry implements RequestObserver {
  /** Requests by route, then by `status * 8 + method index`. */
  private readonly counts = new Map<string, Map<number, number>>();
  private readonly counting: boolean;

  constructor(
    private readonly settings: TelemetrySettings,
    metrics: ServiceMetrics,
    private readonly logger: Logger,
    private readonly access: AccessLog | null,
  ) {
    this.counting = metrics.enabled;
    metrics.counter('agentgov_http_requests_total', 'HTTP requests answered, by route, method and status (499: the client went away first)', () => this.samples());
  }

  /** False when nothing is to be done per request: the observer is then not installed. */
  get needed(): boolean {
    return this.counting || this.access !== null || this.settings.slowRequestMs > 0;
  }

  arrived(request: IncomingMessage, response: ServerResponse, route: LeanRoute | null, path: string): void {
    const started = performance.now();
    response.on('close', () => this.ended(request, response, route, path, started));
  }

  private ended(request: IncomingMessage, response: ServerResponse, route: LeanRoute | null, path: string, started: number): void {
    const durationMs = performance.now() - started;
    const status = response.writableFinished ? response.statusCode : CLIENT_CLOSED;
    const name = route === null ? expressRoute(request) : route.name(path);
    if (this.counting) this.count(name, request.method, status);
    const slow = this.settings.slowRequestMs > 0 && durationMs > this.settings.slowRequestMs;
    const logged = this.access !== null && route !== null && !PROBE_ROUTES.has(name);
    if (!slow && !logged) return;
    const fields = { route: name, method: request.method, path, status, durationMs: Math.round(durationMs * 1000) / 1000, traceId: knownTraceId(request) ?? null };
    if (logged) this.access!(fields);
    if (slow) this.logger.warn({ ...fields, slowRequestMs: this.settings.slowRequestMs }, 'slow request');
  }

  private count(route: string, method: string | undefined, status: number): void {
    let byKey = this.counts.get(route);
    if (byKey === undefined) this.counts.set(route, (byKey = new Map()));
    const key = status * 8 + methodIndex(method);
    byKey.set(key, (byKey.get(key) ?? 0) + 1);
  }

  private samples(): Sample[] {
    const samples: Sample[] = [];
    for (const [route, byKey] of this.counts) {
      for (const [key, value] of byKey) {
        const method = key % 8;
        samples.push([{ route, method: method === OTHER_METHOD ? 'other' : METHODS[method], status: String((key - method) / 8) }, value]);
      }
    }
    return samples;
  }
}

function methodIndex(method: string | undefined): number {
  const index = METHODS.indexOf(method as (typeof METHODS)[number]);
  return index < 0 ? OTHER_METHOD : index;
}

/** The pattern of the Nest route express matched (`/admin/agents/:id`), or `unmatched`. */
function expressRoute(request: IncomingMessage): string {
  const route = (request as { route?: { path?: unknown } }).route;
  return typeof route?.path === 'string' ? route.path : UNMATCHED;
}
