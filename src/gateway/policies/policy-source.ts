import { createParamDecorator, ExecutionContext, type RawBodyRequest } from '@nestjs/common';
import type { Request } from 'express';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)/i;

/**
 * The policy text of a request, as the user wrote it, so that every error's line and column
 * points into what was sent: YAML arrives as text (application/yaml, text/yaml); JSON arrives
 * parsed, and its text is the raw body the JSON parser kept (JSON is valid YAML for the loader).
 * Re-serialising the parsed object instead would number lines of a text nobody sent.
 */
export function policySourceOf(request: RawBodyRequest<Request>): string {
  const text = typeof request.body === 'string' ? request.body : request.is(JSON_TYPES) && request.rawBody !== undefined ? jsonText(request) : null;
  // Nothing sent is told apart from something sent in an unknown type: `{}` and `[]` are policies
  // with errors to show, and an empty body is not a media type problem.
  if (text === null && !hasBody(request)) throw emptyBody();
  if (text === null) throw new AppError(ErrorCode.UnsupportedMediaType, 'Send the policy as application/json or application/yaml');
  if (text.trim() === '') throw emptyBody();
  return text;
}

const JSON_TYPES = ['application/json', 'application/*+json'];

function emptyBody(): AppError {
  return AppError.invalid('The request body is empty: send the policy as application/json or application/yaml');
}

function hasBody(request: Request): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** `@PolicySource() source: string`: the policy text of the request (see policySourceOf). */
export const PolicySource = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  return policySourceOf(context.switchToHttp().getRequest<RawBodyRequest<Request>>());
});

function jsonText(request: RawBodyRequest<Request>): string {
  if (!Buffer.isBuffer(request.rawBody)) throw new Error('JSON body without its raw bytes: the gateway must keep rawBody');
  // RFC 8259 section 8.1: JSON between systems is UTF-8. Decoding the bytes in any other charset
  // ourselves could disagree with the JSON parser, and so with the positions we report.
  const charset = CHARSET.exec(request.headers['content-type'] ?? '')?.[1].toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new AppError(ErrorCode.UnsupportedMediaType, `Send JSON policies in UTF-8 (got charset ${charset})`);
  }
  // TextDecoder drops a leading byte order mark, as the JSON parser does: columns on line 1 count from the first character.
  return new TextDecoder('utf-8').decode(request.rawBody);
}

/** Proposed policies inside a JSON request: YAML/JSON text, a list of policies, or a `{policies: [...]}` object. */
export function proposedSourceOf(value: unknown, field = 'policies'): string {
  if (typeof value === 'string' && value.trim() !== '') return value;
  if (Array.isArray(value)) return JSON.stringify({ policies: value }, null, 2);
  if (typeof value === 'object' && value !== null) return JSON.stringify(value, null, 2);
  throw AppError.invalid(`${field} must be policy YAML/JSON text, a list of policies, or a policy object`);
}
