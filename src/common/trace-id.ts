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

/** A W3C traceparent for an outgoing call; a non-hex trace id is mapped to one by hashing. */
export function traceparentFor(traceId: string): string {
  const w3c = isW3cTraceId(traceId) ? traceId : createHash('sha256').update(traceId).digest('hex').slice(0, 32);
  return `00-${w3c}-${randomHex(8)}-01`;
}

/** 32 lowercase hex characters, not all zero. */
function isW3cTraceId(id: string): boolean {
  return id !== INVALID_TRACE_ID && W3C_TRACE_ID.test(id);
}
