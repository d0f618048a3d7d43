import { status as GrpcStatus } from '@grpc/grpc-js';
import { AppError } from './app-error';
import { ErrorCode, grpcStatusOf } from './error-code';

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
 * SPEC.md's 403 calls the trace id `trace_id`, and so does every body that carries one (the
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

/** The gRPC face of the same error: the status of the code errorBody gives it (a value the database refuses is INVALID_ARGUMENT, as it is a 400), else INTERNAL. */
export function grpcErrorOf(error: unknown): { code: GrpcStatus; message: string; unexpected: boolean } {
  const { body, unexpected } = errorBody(error);
  const known = knownError(error);
  return { code: known ? grpcStatusOf(known.code) : GrpcStatus.INTERNAL, message: String(body.message), unexpected };
}

function knownError(error: unknown): AppError | null {
  return error instanceof AppError ? error : databaseRefusal(error);
}

/**
 * SQLSTATE class 22 (a NUL character, an out-of-range number) is the client's input, not a
 * server fault; 23505 (unique violation) is a conflict.
 */
function databaseRefusal(error: unknown): AppError | null {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !(error instanceof Error) || error.name !== 'QueryFailedError') return null;
  if (code.startsWith('22')) return AppError.invalid('A value in the request cannot be stored (for example a NUL character or an out-of-range number)');
  if (code === '23505') return new AppError(ErrorCode.Conflict, 'A resource with the same identity already exists');
  return null;
}
