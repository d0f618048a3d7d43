import type { IncomingMessage } from 'node:http';
import { resolveTraceId } from './trace-id';

/*
 * Reading a raw node:http request, for the lean paths that run ahead of express (the proxy,
 * the PDP's HTTP routes, the sidecar's routes).
 */

/** A header's value; the first one when it was sent more than once. */
export function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * A header's value as `request.headers` would give it, found in the parser's `rawHeaders` list:
 * `joined` headers sent more than once are joined with ", " (X-Trace-ID, traceparent), the
 * others keep their first value (Authorization). `request.headers` builds an object of every
 * header on first use, which costs more than this scan where a path reads only a few.
 */
export function rawHeader(request: IncomingMessage, lowerName: string, joined: boolean): string | undefined {
  const raw = request.rawHeaders;
  let value: string | undefined;
  for (let index = 0; index < raw.length; index += 2) {
    const name = raw[index];
    if (name.length !== lowerName.length || name.toLowerCase() !== lowerName) continue;
    if (value === undefined) value = raw[index + 1];
    else if (joined) value += `, ${raw[index + 1]}`;
    else break;
  }
  return value;
}

/** A request that may carry its trace id (express's `request.traceId`, set by the request-context middleware). */
type TracedRequest = IncomingMessage & { traceId?: string };

/**
 * The request's trace id: its X-Trace-ID, else its traceparent's, else a new one. Kept on the
 * request, so every call for one request (the handler's, its request log line's) names the same.
 */
export function requestTraceId(request: TracedRequest): string {
  return (request.traceId ??= resolveTraceId(rawHeader(request, 'x-trace-id', true), rawHeader(request, 'traceparent', true)));
}

/** The trace id the request was given by `requestTraceId` or express's middleware, if any yet. */
export function knownTraceId(request: TracedRequest): string | undefined {
  return request.traceId;
}

/** The URL's path, without its query string. */
export function pathOf(url: string | undefined): string {
  if (url === undefined) return '';
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}
