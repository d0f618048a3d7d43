import type { NextFunction, Request, Response } from 'express';
import { ErrorCode } from '../../core/common/error-code';

/**
 * Errors thrown by body-parser: http-errors with a 4xx `status`, and a `type` for its own; a
 * body that does not inflate as its Content-Encoding says (zlib's `Z_DATA_ERROR`, brotli's
 * `ERR__ERROR_…`) comes with the zlib error's `code` and no `type`.
 */
interface BodyParserError {
  type?: string;
  status: number;
  code?: string;
  /** The text that failed to parse. */
  body?: unknown;
}

/**
 * Express error middleware placed right after the body parsers: answers their errors (bad
 * JSON, oversize body) in the service's shape before Nest turns them into generic 400s.
 */
export function bodyParserErrors(error: unknown, request: Request, response: Response, next: NextFunction): void {
  if (!isBodyParserError(error)) return next(error);
  const { status, code, message } = describe(error, request);
  response.status(status).json({ error: code, message });
}

function isBodyParserError(error: unknown): error is BodyParserError {
  if (typeof error !== 'object' || error === null) return false;
  const { type, status } = error as Partial<BodyParserError>;
  return typeof status === 'number' && (typeof type === 'string' || (status >= 400 && status < 500));
}

function describe(error: BodyParserError, request: Request): { status: number; code: ErrorCode; message: string } {
  if (error.type === undefined) {
    // The body did not inflate: it is not in the Content-Encoding it names (gzip, deflate, br).
    const encoding = String(request.headers['content-encoding'] ?? '').slice(0, 40);
    return { status: 400, code: ErrorCode.InvalidRequest, message: `Request body is not valid ${encoding} data (Content-Encoding: ${encoding})` };
  }
  switch (error.type) {
    case 'entity.too.large':
      return { status: 413, code: ErrorCode.PayloadTooLarge, message: 'Request body is larger than the limit of this endpoint' };
    case 'entity.parse.failed':
      return { status: 400, code: ErrorCode.InvalidJson, message: isJsonScalar(error.body) ? 'Request body must be a JSON object' : 'Request body is not valid JSON' };
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return { status: 415, code: ErrorCode.UnsupportedMediaType, message: 'Unsupported body encoding or charset' };
    default:
      return { status: 400, code: ErrorCode.InvalidRequest, message: 'Request body could not be read' };
  }
}

/** Valid JSON the parser refuses all the same: `null`, `"text"`, `42` (it takes objects and lists only). */
function isJsonScalar(text: unknown): boolean {
  if (typeof text !== 'string') return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
