import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Inject } from '@nestjs/common';
import { Metadata, type ServerDuplexStream, type ServerUnaryCall } from '@grpc/grpc-js';
import type { Request, Response } from 'express';
import { Logger } from 'pino';
import { LOGGER } from '../logging/logging.module';
import { AppError } from '../common/app-error';
import { Observable, of, throwError } from 'rxjs';
import { ErrorCode } from '../common/error-code';
import { errorBody, errorHeaders, grpcErrorOf } from '../common/error-body';
import { callTrace } from '../common/grpc-trace';
import type { RequestFailures } from '../decision/request-failures';

/** Codes for Nest's own HTTP exceptions, by status. */
const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: ErrorCode.InvalidRequest,
  401: ErrorCode.Unauthorized,
  403: ErrorCode.Forbidden,
  404: ErrorCode.NotFound,
  409: ErrorCode.Conflict,
  413: ErrorCode.PayloadTooLarge,
  415: ErrorCode.UnsupportedMediaType,
  429: ErrorCode.RateLimited,
  503: ErrorCode.ServiceUnavailable,
};

/**
 * The face of every error of the Nest routes: Nest's own errors become AppErrors, then
 * `errorBody` writes them (HTTP), or `grpcStatusOf` names their status (gRPC).
 */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  constructor(
    @Inject(LOGGER) private readonly logger: Logger,
    /** Told of the 5xx answers (alerting's `error` trigger); the sidecar, which has no alerting, has none. */
    private readonly failures?: RequestFailures,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void | Observable<never> | Observable<undefined> {
    if (host.getType() === 'rpc') return this.grpc(exception, host);
    const context = host.switchToHttp();
    const request = context.getRequest<Request>();
    const response = context.getResponse<Response>();
    const error = exception instanceof HttpException ? fromNest(exception, request) : exception;
    const answer = errorBody(error, request.traceId);
    const { status, body, unexpected } = answer;
    if (unexpected) this.logger.error({ err: exception, traceId: request.traceId, path: request.path }, 'unhandled error');
    this.failures?.answered({ traceId: request.traceId, method: request.method, path: request.path }, answer);
    if (response.headersSent) {
      response.destroy();
      return;
    }
    response.status(status).set(errorHeaders(body)).json(body);
  }

  /**
   * gRPC calls fail with the status of the error's code (`grpcStatusOf`) and its message; an
   * unknown error is INTERNAL, logged. A raw stream call (`@GrpcStreamCall`, EvaluateStream) is
   * ended here with the status: Nest neither sends a failed raw call's error to the client nor
   * handles its rejection, so a guard's refusal left the call open and crashed the process.
   */
  private grpc(exception: unknown, host: ArgumentsHost): Observable<never> | Observable<undefined> {
    const error = exception instanceof HttpException ? new AppError(CODE_BY_STATUS[exception.getStatus()] ?? ErrorCode.InvalidRequest, messageOf(exception)) : exception;
    const { unexpected, ...status } = grpcErrorOf(error);
    if (unexpected) this.logger.error({ err: exception }, 'unhandled gRPC error');
    const streamCall = rawStreamCall(host);
    this.reportGrpcFailure(host, streamCall, error);
    if (streamCall === null) return throwError(() => status);
    streamCall.emit('error', status);
    return of(undefined);
  }

  private reportGrpcFailure(host: ArgumentsHost, streamCall: ServerDuplexStream<unknown, unknown> | null, error: unknown): void {
    if (this.failures === undefined) return;
    const call = streamCall ?? host.getArgByIndex<ServerUnaryCall<unknown, unknown> | undefined>(2);
    if (typeof call?.getPath !== 'function') return;
    this.failures.answered({ traceId: callTrace(call.metadata)(), method: '', path: call.getPath() }, errorBody(error));
  }
}

/** The call of a `@GrpcStreamCall` handler (its only argument), or null for a `@GrpcMethod` (request, metadata, call). */
function rawStreamCall(host: ArgumentsHost): ServerDuplexStream<unknown, unknown> | null {
  if (host.getArgByIndex(1) instanceof Metadata) return null;
  const call = host.getArgByIndex<ServerDuplexStream<unknown, unknown> | undefined>(0);
  return call?.metadata instanceof Metadata ? call : null;
}

function fromNest(exception: HttpException, request: Request): AppError | HttpException {
  const status = exception.getStatus();
  if (status >= 500 && CODE_BY_STATUS[status] === undefined) return exception;
  const code = CODE_BY_STATUS[status] ?? ErrorCode.InvalidRequest;
  return new AppError(code, status === 404 ? `No route ${request.method} ${request.path}` : messageOf(exception));
}

function messageOf(exception: HttpException): string {
  const response = exception.getResponse();
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown }).message;
  if (Array.isArray(message)) return message.join('; ');
  return typeof message === 'string' ? message : exception.message;
}
