import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { resolveTraceId } from '../../core/common/trace-id';
import { ServiceHeader } from '../../core/common/service-header';

/**
 * Express middleware for the API routes: gives each request its trace id (echoed in
 * X-Trace-ID) and writes one access-log line, carrying that trace id, when it ends.
 */
export function requestContext(logger: Logger) {
  return (request: Request, response: Response, next: NextFunction): void => {
    const started = performance.now();
    request.traceId = resolveTraceId(request.header('x-trace-id'), request.header('traceparent'));
    response.setHeader(ServiceHeader.ClientTraceId, request.traceId);
    response.on('finish', () => {
      const level = response.statusCode >= 500 ? 'error' : 'info';
      logger[level](
        { traceId: request.traceId, method: request.method, path: request.path, status: response.statusCode, ms: Math.round((performance.now() - started) * 1000) / 1000 },
        'request',
      );
    });
    next();
  };
}
