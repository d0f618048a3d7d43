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

/** The request's trace id: its X-Trace-ID, else its traceparent's, else a new one. */
export function requestTraceId(request: IncomingMessage): string {
  return resolveTraceId(header(request, 'x-trace-id'), header(request, 'traceparent'));
}

/** The URL's path, without its query string. */
export function pathOf(url: string | undefined): string {
  if (url === undefined) return '';
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}
