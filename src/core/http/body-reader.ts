import type { IncomingMessage } from 'node:http';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { findProblem } from '../common/json-body-guard';

/** Why a body could not be read for a policy to inspect. */
export type BodyProblem = 'too_large' | 'aborted';

/**
 * Reads a request body of at most `limit` bytes into memory: only done when an applicable
 * policy reads JSON body fields; every other body streams through untouched.
 */
export function readBody(incoming: IncomingMessage, limit: number): Promise<Buffer | BodyProblem> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (value: Buffer | BodyProblem) => {
      if (settled) return;
      settled = true;
      resolve(value);
    };
    const collect = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // Paused until the caller answers; its resume() then drains the rest. Still listening,
        // this would pause the stream again at the next chunk, the body would never be read
        // to its end, and a kept-alive connection would answer nothing more.
        incoming.off('data', collect);
        incoming.pause();
        settle('too_large');
        return;
      }
      chunks.push(chunk);
    };
    incoming.on('data', collect);
    incoming.on('end', () => settle(Buffer.concat(chunks, size)));
    incoming.on('error', () => settle('aborted'));
    incoming.on('close', () => settle(incoming.complete ? Buffer.concat(chunks, size) : 'aborted'));
  });
}

export const INVALID_JSON: unique symbol = Symbol('invalid_json');

/** The JSON a body holds, or INVALID_JSON; an empty body is no JSON at all. */
export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return INVALID_JSON;
  }
}

/** True when the request says its body is JSON. */
export function isJsonRequest(incoming: IncomingMessage): boolean {
  const header = incoming.headers['content-type'];
  if (header === undefined) return false;
  // Media types are case-insensitive (RFC 9110 8.3.1): an upstream parses `Application/JSON` as
  // JSON, so a policy on its fields must see them too.
  const type = header.toLowerCase();
  return type.startsWith('application/json') || /^application\/[^;]*\+json/.test(type);
}

/**
 * Passes a chunked body (no Content-Length) through while counting it; past `limit` it stops
 * and marks `state.tooLarge`, which aborts the upstream call and answers 413.
 */
export async function* limitedBody(incoming: IncomingMessage, limit: number, state: { tooLarge: boolean }): AsyncGenerator<Buffer> {
  let size = 0;
  for await (const chunk of incoming) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      state.tooLarge = true;
      throw new Error('request body too large');
    }
    yield chunk as Buffer;
  }
}

/**
 * The JSON body of a lean-path API request (the PDP's, the sidecar's), checked as express's
 * parser and jsonBodyGuard check the other routes': JSON content type (415), then as
 * `readJsonContent`, an empty body being no JSON (400 invalid_json).
 */
export async function readJsonBody(request: IncomingMessage, limit: number): Promise<unknown> {
  if (!isJsonRequest(request)) throw new AppError(ErrorCode.UnsupportedMediaType, 'Content-Type must be application/json');
  const parsed = await readJsonContent(request, limit);
  if (parsed === undefined) throw new AppError(ErrorCode.InvalidJson, 'Request body is not valid JSON');
  return parsed;
}

/**
 * A request body's JSON, whatever its content type: at most `limit` bytes (413), valid JSON
 * (400 invalid_json), not too deep and no NUL (400); undefined for an empty body.
 */
export async function readJsonContent(request: IncomingMessage, limit: number): Promise<unknown> {
  const read = await readBody(request, limit);
  if (read === 'aborted') throw AppError.invalid('The request body ended early');
  if (read === 'too_large') throw new AppError(ErrorCode.PayloadTooLarge, `Request body is larger than ${limit} bytes`);
  const parsed = parseJsonBody(read);
  if (parsed === INVALID_JSON) throw new AppError(ErrorCode.InvalidJson, 'Request body is not valid JSON');
  const problem = typeof parsed === 'object' && parsed !== null ? findProblem(parsed) : null;
  if (problem !== null) throw AppError.invalid(problem);
  return parsed;
}
