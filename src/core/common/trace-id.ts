import { createHash } from 'node:crypto';
import { randomHex } from './random-hex';

const CLIENT_TRACE_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const INVALID_TRACE_ID = '0'.repeat(32);
const TRACEPARENT = /^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;
const W3C_TRACE_ID = /^[0-9a-f]{32}$/;

/** A new trace id: 32 lowercase hex characters, usable as a W3C trace-id. */
export function newTraceId(): string {
  return randomHex(16);
}

/**
 * The request's trace id: the client's X-Trace-ID when it is well-formed, else the trace-id of
 * its W3C traceparent, else a new one.
 */
export function resolveTraceId(clientTraceId: string | undefined, traceparent: string | undefined): string {
  if (clientTraceId !== undefined && CLIENT_TRACE_ID.test(clientTraceId)) return clientTraceId;
  const parent = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  if (parent && parent[1] !== INVALID_TRACE_ID) return parent[1];
  return newTraceId();
}

/**
 * A W3C traceparent for an outgoing call, naming `spanId` (16 hex characters) as the caller's
 * span: the proxy names its span of the call (docs/observability.md "Traces"), so the upstream's
 * spans hang under it.
 */
export function traceparentFor(traceId: string, spanId: string = randomHex(8)): string {
  return `00-${w3cTraceId(traceId)}-${spanId}-01`;
}

/** The W3C trace-id of a trace id: itself when it is one, else (a client's X-Trace-ID of another form) the start of its SHA-256, so it maps to the same one everywhere. */
export function w3cTraceId(traceId: string): string {
  return isW3cTraceId(traceId) ? traceId : createHash('sha256').update(traceId).digest('hex').slice(0, 32);
}

/** 32 lowercase hex characters, not all zero. */
function isW3cTraceId(id: string): boolean {
  return id !== INVALID_TRACE_ID && W3C_TRACE_ID.test(id);
}
