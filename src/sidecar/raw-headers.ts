import type { IncomingMessage } from 'node:http';
import { resolveTraceId } from '../common/trace-id';

/*
 * The few headers /enforce reads, found in the parser's `rawHeaders` list. `request.headers`
 * builds an object of every header on first use, which cost more per request than the whole
 * scan below (the bare server of the bench never builds it).
 */

/**
 * A header's value as `request.headers` would give it: `joined` headers sent more than once
 * are joined with ", " (X-Trace-ID, traceparent), the others keep their first value
 * (Authorization).
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

/** The request's trace id (as requestTraceId of raw-request.ts). */
export function traceIdOf(request: IncomingMessage): string {
  return resolveTraceId(rawHeader(request, 'x-trace-id', true), rawHeader(request, 'traceparent', true));
}
