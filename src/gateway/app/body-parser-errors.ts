import type { NextFunction, Request, Response } from 'express';
import { ErrorCode } from '../../core/common/error-code';

/** Errors thrown by body-parser carry a `type`. */
interface BodyParserError {
  type: string;
  status?: number;
  /** The text that failed to parse. */
  body?: unknown;
}

/**
 * Express error middleware placed right after the body parsers: answers their errors (bad
 * JSON, oversize body) in the service's shape before Nest turns them into generic 400s.
 */
export function bodyParserErrors(error: unknown, _request: Request, response: Response, next: NextFunction): void {
  if (!isBodyParserError(error)) return next(error);
  const { status, code, message } = describe(error);
  response.status(status).json({ error: code, message });
}

function isBodyParserError(error: unknown): error is BodyParserError {
  return typeof error === 'object' && error !== null && typeof (error as BodyParserError).type === 'string' && 'status' in error;
}

function describe(error: BodyParserError): { status: number; code: ErrorCode; message: string } {
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
