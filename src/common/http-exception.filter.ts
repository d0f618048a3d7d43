import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Inject } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Logger } from 'pino';
import { LOGGER } from '../logging/logging.module';
import { AppError } from './app-error';
import { ErrorCode } from './error-code';

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
 * The HTTP face of every error: `{error, message, ...}`. Domain errors keep their code and
 * fields; Nest's own errors get the matching code; anything else is a 500 that
 * names the trace id and never carries a stack trace or SQL.
 */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  constructor(@Inject(LOGGER) private readonly logger: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const context = host.switchToHttp();
    const request = context.getRequest<Request>();
    const response = context.getResponse<Response>();
    const { status, body } = this.describe(exception, request);
    if (response.headersSent) {
      response.destroy();
      return;
    }
    response.status(status).json(body);
  }

  private describe(exception: unknown, request: Request): { status: number; body: Record<string, unknown> } {
    if (exception instanceof AppError) return { status: exception.status, body: exception.toBody() };
    if (exception instanceof HttpException) return nestError(exception, request);
    const refused = databaseRefusal(exception);
    if (refused) return refused;
    this.logger.error({ err: exception, traceId: request.traceId, path: request.path }, 'unhandled error');
    return {
      status: 500,
      body: { error: ErrorCode.InternalError, message: 'Internal server error', traceId: request.traceId },
    };
  }
}

/**
 * A value the database refuses (SQLSTATE class 22: a NUL character, an out-of-range number) is
 * the client's input, not a server fault; a unique violation is a conflict.
 */
function databaseRefusal(exception: unknown): { status: number; body: Record<string, unknown> } | null {
  const code = (exception as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !(exception instanceof Error) || exception.name !== 'QueryFailedError') return null;
  if (code.startsWith('22')) {
    return { status: 400, body: { error: ErrorCode.InvalidRequest, message: 'A value in the request cannot be stored (for example a NUL character or an out-of-range number)' } };
  }
  if (code === '23505') return { status: 409, body: { error: ErrorCode.Conflict, message: 'A resource with the same identity already exists' } };
  return null;
}

function nestError(exception: HttpException, request: Request): { status: number; body: Record<string, unknown> } {
  const status = exception.getStatus();
  const code = CODE_BY_STATUS[status] ?? (status >= 500 ? ErrorCode.InternalError : ErrorCode.InvalidRequest);
  const message = status === 404 ? `No route ${request.method} ${request.path}` : messageOf(exception);
  return { status, body: { error: code, message } };
}

function messageOf(exception: HttpException): string {
  const response = exception.getResponse();
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown }).message;
  if (Array.isArray(message)) return message.join('; ');
  return typeof message === 'string' ? message : exception.message;
}
