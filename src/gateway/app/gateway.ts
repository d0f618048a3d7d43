import { NestFactory } from '@nestjs/core';
import { MicroserviceOptions } from '@nestjs/microservices';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'pino';
import { AppModule } from './app.module';
import { AppConfig } from '../../core/config/app-config';
import { bodyParserErrors } from './body-parser-errors';
import { HttpExceptionFilter } from '../../core/http/http-exception.filter';
import { RequestFailures } from '../../core/decision/request-failures';
import { jsonBodyGuard } from '../../core/common/json-body-guard';
import { requestContext } from './request-context.middleware';
import { createValidationPipe } from '../../core/common/validation';
import { setupSwagger } from './swagger';
import { serveDashboard } from './dashboard';
import { createLogger, NestPinoLogger } from '../../core/logging/logger';
import { mountLeanRoutes } from '../../core/http/lean-routes';
import { AdapterHttpHandler } from '../../core/pdp/adapter-http.handler';
import { McpHandler } from '../../core/mcp/mcp.handler';
import { ProxyHandler } from '../../core/proxy/proxy-handler';
import { pdpGrpcOptions } from '../pdp/pdp-grpc-options';
import { Telemetry } from '../../core/telemetry/telemetry';
import '../auth/request-context';

export const YAML_MEDIA_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];

/**
 * Builds the gateway application (not yet listening): the Nest HTTP app with its body limits,
 * validation, error filter and docs. `npm start`, the e2e tests and the benchmarks all start
 * the gateway through here.
 */
export async function createGateway(config: AppConfig, logger: Logger = createLogger(config.logLevel)): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, logger), {
    bodyParser: false,
    // The JSON parser keeps the bytes as request.rawBody: webhook signatures are over the raw body.
    rawBody: true,
    logger: new NestPinoLogger(logger),
    abortOnError: false,
  });
  app.disable('x-powered-by');
  app.set('query parser', 'extended');
  // The client address (the billing rate limit's key) is read from X-Forwarded-For only when it comes from a configured proxy.
  if (config.http.trustedProxies.length > 0) app.set('trust proxy', config.http.trustedProxies);
  app.use(requestContext(logger));
  app.useBodyParser('json', { limit: config.http.maxJsonBytes, type: ['application/json', 'application/*+json'] });
  app.useBodyParser('text', { limit: config.http.maxJsonBytes, type: YAML_MEDIA_TYPES });
  // The confirmation pages of approval links post a plain HTML form (src/gateway/approvals).
  app.useBodyParser('urlencoded', { limit: 16 * 1024, extended: false });
  app.use(bodyParserErrors);
  app.use(jsonBodyGuard);
  app.useGlobalPipes(createValidationPipe());
  app.useGlobalFilters(new HttpExceptionFilter(logger, app.get(RequestFailures)));
  setupSwagger(app, config);
  // Before init: the static files must come ahead of the not-found handler Nest adds there.
  serveDashboard(app);
  const telemetry = app.get(Telemetry);
  if (config.grpc.port !== 0) {
    const interceptors = telemetry.grpc.needed ? [telemetry.grpc.interceptor] : [];
    app.connectMicroservice<MicroserviceOptions>(pdpGrpcOptions(config, interceptors), { inheritAppConfig: true });
  }
  try {
    await app.init();
    await app.startAllMicroservices();
  } catch (error) {
    // A start that fails half-way (e.g. an invalid POLICIES_FILE) must not leave connections open.
    await app.close().catch(() => undefined);
    throw error;
  }
  // The lean routes, ahead of express (src/core/http/lean-routes.ts): the governed proxy, the adapter endpoints, the MCP gateway and /metrics (behind METRICS_TOKEN).
  const routes = [app.get(ProxyHandler), app.get(AdapterHttpHandler), app.get(McpHandler), telemetry.endpoint];
  mountLeanRoutes(app, routes, telemetry.requests.needed ? telemetry.requests : undefined);
  return app;
}
