import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { errorBody, errorHeaders, ErrorResponse } from '../common/error-body';
import { atTurnEnd } from '../common/turn-end';
import { sendJson } from './send-json';

/** A lean route's answer. */
export interface JsonAnswer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** How one request of a lean JSON route is answered and reported. */
export interface JsonRouteContext {
  traceId: string;
  /** Headers every answer carries, success or failure (the trace id). */
  headers: Record<string, string>;
  logger: Logger;
  /** What an unexpected failure is logged as. */
  what: string;
  /** Hears every failure answer (RequestFailures, for the `error` alerts of 5xx answers). */
  failed?: (failure: ErrorResponse) => void;
}

/**
 * Serves one request of a lean JSON route (docs/architecture.md, "The lean path"): runs the
 * answer, never throws. A thrown error becomes its error body (AppError codes map to statuses;
 * anything else is a logged 500 with the trace id), the rest of the request body is drained,
 * and answers leave at the end of the event loop's turn, after the turn's audit entries are
 * queued.
 */
export function serveJson(request: IncomingMessage, response: ServerResponse, context: JsonRouteContext, answer: () => Promise<JsonAnswer>): void {
  answer().then(
    ({ status, body, headers }) => atTurnEnd(() => sendJson(response, status, body, headers === undefined ? context.headers : { ...context.headers, ...headers })),
    (error: unknown) => sendFailure(request, response, context, error),
  );
}

/** Answers a lean route's failure: its error body and headers (Retry-After), the request body drained. */
export function sendFailure(request: IncomingMessage, response: ServerResponse, context: JsonRouteContext, error: unknown): void {
  request.resume();
  const failure = errorBody(error, context.traceId);
  if (failure.unexpected) context.logger.error({ err: error, traceId: context.traceId }, `${context.what} failed`);
  context.failed?.(failure);
  atTurnEnd(() => sendJson(response, failure.status, failure.body, { ...context.headers, ...errorHeaders(failure.body) }));
}
