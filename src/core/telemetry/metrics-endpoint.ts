import { BearerToken } from './bearer-token';
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { AppError } from '../common/app-error';
import { errorBody } from '../common/error-body';
import { ErrorCode } from '../common/error-code';
import type { TelemetrySettings } from '../config/shared-settings';
import type { LeanRoute } from '../http/lean-routes';
import { sendJson } from '../http/send-json';
import type { ServiceMetrics } from './service-metrics';

const PATH = '/metrics';

/**
 * `GET /metrics` (docs/observability.md "Metrics"): on a listener of its own when METRICS_PORT is
 * set (bound to HOST, what Prometheus operators expect: keep the port inside the cluster), else
 * on the main port as a lean route, and only with METRICS_TOKEN: the main port faces the agents,
 * and the metrics name routes, policies' effects and the fleet's state. Wherever it is served,
 * METRICS_TOKEN, when set, must come as `Authorization: Bearer <token>`. With neither set,
 * `/metrics` is not served.
 */
export class MetricsEndpoint implements LeanRoute {
  private server: http.Server | null = null;
  private readonly token: BearerToken;

  constructor(
    private readonly settings: TelemetrySettings,
    private readonly host: string,
    private readonly metrics: ServiceMetrics,
    private readonly logger: Logger,
  ) {
    this.token = new BearerToken(settings.metricsToken);
  }

  /** True when `/metrics` is served on the main port (METRICS_TOKEN without METRICS_PORT). */
  matches(_request: IncomingMessage, path: string): boolean {
    return path === PATH && this.settings.metricsPort === undefined && this.token.configured;
  }

  name(): string {
    return PATH;
  }

  handle(request: IncomingMessage, response: ServerResponse): void {
    request.resume();
    this.answer(request).then(
      (text) => {
        response.writeHead(200, { 'content-type': this.metrics.contentType, 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
        response.end(text);
      },
      (error: unknown) => {
        const failure = errorBody(error);
        if (failure.unexpected) this.logger.error({ err: error }, 'metrics not collected');
        sendJson(response, failure.status, failure.body, failure.status === 401 ? { 'www-authenticate': 'Bearer realm="metrics"' } : {});
      },
    );
  }

  /** Starts the METRICS_PORT listener, if there is one. */
  async listen(): Promise<void> {
    const port = this.settings.metricsPort;
    if (port === undefined) return;
    const server = http.createServer((request, response) => {
      if (request.url?.split('?')[0] !== PATH) {
        request.resume();
        sendJson(response, 404, { error: ErrorCode.NotFound, message: `Only ${PATH} is served on METRICS_PORT` });
        return;
      }
      this.handle(request, response);
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, this.host, resolve));
    this.server = server;
    this.logger.info({ port, host: this.host, bearerRequired: this.token.configured }, 'metrics listening');
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server === null) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private async answer(request: IncomingMessage): Promise<string> {
    if (request.method !== 'GET' && request.method !== 'HEAD') throw new AppError(ErrorCode.NotFound, `Cannot ${request.method} ${PATH}`);
    if (this.token.configured && !this.token.matches(request.headers.authorization)) {
      throw new AppError(ErrorCode.Unauthorized, 'Metrics need METRICS_TOKEN as a bearer token');
    }
    return this.metrics.exposition();
  }

}

