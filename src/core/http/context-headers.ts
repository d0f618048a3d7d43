import type { IncomingHttpHeaders } from 'node:http';
import { CONTEXT_HEADER_PREFIX } from '../common/service-header';

const EMPTY: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * `context` of a request (the proxy's, an MCP call's): each `X-Service-Context-<Name>` header as `context.<name>`,
 * lower-cased with dashes turned into underscores (`X-Service-Context-Data-Class` is
 * `context.data_class`).
 */
export function contextFromHeaders(headers: IncomingHttpHeaders): Readonly<Record<string, unknown>> {
  let context: Record<string, unknown> | null = null;
  for (const name in headers) {
    if (!name.startsWith(CONTEXT_HEADER_PREFIX)) continue;
    context ??= {};
    context[name.slice(CONTEXT_HEADER_PREFIX.length).replace(/-/g, '_')] = headers[name];
  }
  return context ?? EMPTY;
}
