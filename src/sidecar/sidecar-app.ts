import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { ServiceHeader } from '../common/service-header';
import { resolveTraceId } from '../common/trace-id';
import { HttpExceptionFilter } from '../common/http-exception.filter';
import { SidecarConfig } from './sidecar-config';
import { NestPinoLogger } from '../logging/logger';
import { isProxyUrl } from '../proxy/proxy-path';
import { ProxyHandler } from '../proxy/proxy-handler';
import { BundleStore } from './bundle-store';
import { SIDECAR_ADAPTER_PATHS, SidecarAdapterHandler } from './sidecar-adapter-handler';
import { SidecarHandler } from './sidecar-handler';
import { SidecarModule } from './sidecar.module';
import { header, pathOf } from '../common/raw-request';

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * Builds the sidecar application (not yet listening). Its routes are served on the lean path,
 * ahead of express (as the gateway's proxy is): `/enforce`, `/enforce/batch`, `/health`, the
 * adapter paths (`/v1/check`, `/v1/audit`, `/api/v1/pdp/evaluate`) and `/proxy/*`; express
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
  try {
    await app.init();
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
  mountSidecarRoutes(app);
  return app;
}

function mountSidecarRoutes(app: NestExpressApplication): void {
  const server = app.getHttpServer() as Server;
  const sidecar = app.get(SidecarHandler);
  const proxy = app.get(ProxyHandler);
  const store = app.get(BundleStore);
  const adapters = app.get(SidecarAdapterHandler);
  const [express] = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (sidecar.serves(request)) return sidecar.handle(request, response);
    const path = pathOf(request.url);
    if (SIDECAR_ADAPTER_PATHS.has(path)) return adapters.handle(request, response, path);
    if (!isProxyUrl(request.url)) return express(request, response);
    const failure = store.failure;
    if (failure === null) return proxy.handle(request, response);
    request.resume();
    sidecar.failClosed(response, resolveTraceId(header(request, ServiceHeader.ClientTraceId.toLowerCase()), undefined), failure);
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
}
