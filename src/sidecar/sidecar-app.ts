import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { ServiceHeader } from '../core/common/service-header';
import { resolveTraceId } from '../core/common/trace-id';
import { HttpExceptionFilter } from '../core/http/http-exception.filter';
import { SidecarConfig } from './sidecar-config';
import { NestPinoLogger } from '../core/logging/logger';
import { ProxyHandler } from '../core/proxy/proxy-handler';
import { McpHandler } from '../core/mcp/mcp.handler';
import { BundleStore } from './bundle-store';
import { AdapterHttpHandler } from '../core/pdp/adapter-http.handler';
import { LeanRoute, mountLeanRoutes } from '../core/http/lean-routes';
import { SidecarHandler } from './sidecar-handler';
import { SidecarModule } from './sidecar.module';
import { setupSidecarSwagger } from './sidecar-swagger';
import { header } from '../core/common/raw-request';
import { EdgeApprovalStatus } from './edge-approval-status';
import { Telemetry } from '../core/telemetry/telemetry';

/**
 * Builds the sidecar application (not yet listening). Its routes are served on the lean path,
 * ahead of express (as the gateway's proxy is): `/enforce`, `/enforce/batch`, `/health`,
 * `/health/ready`, the adapter paths (`/v1/check`, `/v1/audit`, `/api/v1/pdp/evaluate`,
 * `GET /v1/approvals/:id`), `/proxy/*`, `/mcp/*` and `/metrics` (behind METRICS_TOKEN); express
 * answers the rest (404s).
 */
export async function createSidecar(config: SidecarConfig, logger: Logger): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(SidecarModule.forRoot(config, logger), {
    bodyParser: false,
    logger: new NestPinoLogger(logger),
    abortOnError: false,
  });
  app.disable('x-powered-by');
  app.useGlobalFilters(new HttpExceptionFilter(logger));
  setupSidecarSwagger(app, config.version);
  try {
    await app.init();
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
  mountSidecarRoutes(app);
  return app;
}

/**
 * The sidecar's lean routes (src/core/http/lean-routes.ts): `/enforce`, `/enforce/batch`, `/health`
 * and `/health/ready`; the adapter endpoints (with the approval status), `/proxy/*` and `/mcp/*`,
 * refused while no valid bundle is in force; `/metrics` when served on this port.
 */
function mountSidecarRoutes(app: NestExpressApplication): void {
  const store = app.get(BundleStore);
  const sidecar = app.get(SidecarHandler);
  const telemetry = app.get(Telemetry);
  const routes = [
    sidecar,
    failingClosed(store, sidecar, app.get(AdapterHttpHandler)),
    failingClosed(store, sidecar, app.get(EdgeApprovalStatus)),
    failingClosed(store, sidecar, app.get(ProxyHandler)),
    failingClosed(store, sidecar, app.get(McpHandler)),
    telemetry.endpoint,
  ];
  mountLeanRoutes(app, routes, telemetry.requests.needed ? telemetry.requests : undefined);
}

/** The route, but a 503 naming the reason for every request while no valid bundle is in force (fail closed). */
function failingClosed(store: BundleStore, sidecar: SidecarHandler, route: LeanRoute): LeanRoute {
  return {
    matches: (request, path) => route.matches(request, path),
    name: (path) => route.name(path),
    handle: (request, response, path) => {
      const failure = store.failure;
      if (failure === null) return route.handle(request, response, path);
      request.resume();
      sidecar.failClosed(response, resolveTraceId(header(request, ServiceHeader.ClientTraceId.toLowerCase()), undefined), failure);
    },
  };
}
