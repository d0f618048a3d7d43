import { Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import { AppError } from './app-error';
import { ErrorCode, grpcStatusOf } from './error-code';
import { ServiceHeader } from './service-header';

/** An error as every HTTP answer gives it: a status and `{error, message, ...details}`. */
export interface ErrorResponse {
  status: number;
  body: Record<string, unknown>;
  /** True when the error is a fault of ours (a 500): the caller logs it with the trace id. */
  unexpected: boolean;
}

/**
 * The one way an error becomes an HTTP answer, shared by the Nest filter and the lean paths
 * (proxy, PDP): a domain error keeps its code, status and fields; a value the database refuses
 * is the client's 400 (a unique violation a 409); anything else is a generic 500 that carries
 * no stack, SQL or secret but names the trace id, so the failure can be found in the logs.
 * The proxy's 403 calls the trace id `trace_id` (docs/proxy.md "Answers"), and so does every body that carries one (the
 * response headers carry it on every answer: X-Trace-ID, X-Service-Trace-Id on the proxy).
 */
export function errorBody(error: unknown, traceId?: string): ErrorResponse {
  const known = knownError(error);
  const response = known
    ? { status: known.status, body: known.toBody(), unexpected: false }
    : { status: 500, body: { error: ErrorCode.InternalError, message: 'Internal server error' }, unexpected: true };
  if (response.unexpected && traceId !== undefined) response.body.trace_id = traceId;
  return response;
}

/**
 * The headers an error answer carries beside its body: `Retry-After` when it says when to retry
 * (`retry_after` seconds, a tripped rate_limit), as the proxy's 429 sends it; HTTP clients'
 * retry policies read the header, not the body.
 */
export function errorHeaders(body: Record<string, unknown>): Record<string, string> {
  return typeof body.retry_after === 'number' ? { [ServiceHeader.RetryAfter]: String(body.retry_after) } : {};
}

/** A gRPC call's failure: its status, message and trailers. */
export interface GrpcErrorStatus {
  code: GrpcStatus;
  message: string;
  details: string;
  /** `retry-after` (seconds) when the error says when to retry, as the HTTP answer's header does. */
  metadata?: Metadata;
  unexpected: boolean;
}

/**
 * The gRPC face of the same error: the status of the code errorBody gives it (a value the
 * database refuses is INVALID_ARGUMENT, as it is a 400; an unreachable database UNAVAILABLE, as
 * it is a 503), else INTERNAL.
 */
export function grpcErrorOf(error: unknown): GrpcErrorStatus {
  const { body, unexpected } = errorBody(error);
  const known = knownError(error);
  const message = String(body.message);
  const status: GrpcErrorStatus = { code: known ? grpcStatusOf(known.code) : GrpcStatus.INTERNAL, message, details: message, unexpected };
  const headers = errorHeaders(body);
  if (headers[ServiceHeader.RetryAfter] === undefined) return status;
  status.metadata = new Metadata();
  status.metadata.set('retry-after', headers[ServiceHeader.RetryAfter]);
  return status;
}

function knownError(error: unknown): AppError | null {
  if (error instanceof AppError) return error;
  return databaseRefusal(error) ?? databaseUnavailable(error);
}

/**
 * SQLSTATE class 22 (a NUL character, an out-of-range number) is the client's input, not a
 * server fault; 23505 (unique violation) is a conflict.
 */
function databaseRefusal(error: unknown): AppError | null {
  const code = sqlStateOf(error);
  if (code === null) return null;
  if (code.startsWith('22')) return AppError.invalid('A value in the request cannot be stored (for example a NUL character or an out-of-range number)');
  if (code === UNIQUE_VIOLATION) return new AppError(ErrorCode.Conflict, 'A resource with the same identity already exists');
  return null;
}

const UNIQUE_VIOLATION = '23505';

/** Whether a query failed because a row with the same key exists (SQLSTATE 23505). */
export function isUniqueViolation(error: unknown): boolean {
  return sqlStateOf(error) === UNIQUE_VIOLATION;
}

/** The SQLSTATE of a failed query; null for any other error. */
function sqlStateOf(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && error instanceof Error && error.name === 'QueryFailedError' ? code : null;
}

/** Socket failures of the database connection (pg passes them on as they are). */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);
/** SQLSTATEs of a server that cannot serve now: class 08 (connection exception), 57P01-57P03 (shutting down, starting), 53300 (too many connections). */
const SERVER_UNAVAILABLE = /^(08|57P0[123]$|53300$)/;
/** pg's own errors for a lost or never-made connection (they carry no code), the pool's full-pool timeout among them. */
const CONNECTION_LOST = /Connection terminated|timeout exceeded when trying to connect|not queryable/;

/**
 * The database unreachable, down, restarting or out of connections: a 503 (gRPC UNAVAILABLE),
 * which clients and their SDKs retry, not a 500 (INTERNAL), which they do not. A refusal while
 * connecting (not a QueryFailedError: TypeORM wraps only a query's failures) counts whatever its
 * SQLSTATE, e.g. 55000 for a database not accepting connections.
 */
function databaseUnavailable(error: unknown): AppError | null {
  // Read by shape, not `instanceof Error`: a socket error is made by Node's core, whose Error is
  // another realm's under a test runner's sandbox (Jest), and is still this error.
  if (typeof error !== 'object' || error === null) return null;
  const { code, name, severity, message } = error as { code?: unknown; name?: unknown; severity?: unknown; message?: unknown };
  const connecting = name !== 'QueryFailedError' && typeof severity === 'string';
  const unavailable =
    (typeof code === 'string' && (UNREACHABLE.has(code) || SERVER_UNAVAILABLE.test(code))) || connecting || (typeof message === 'string' && CONNECTION_LOST.test(message));
  return unavailable ? new AppError(ErrorCode.ServiceUnavailable, 'The database is unavailable; try again shortly') : null;
}
