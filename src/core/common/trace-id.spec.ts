import { createHash } from 'node:crypto';
import { newTraceId, resolveTraceId, traceparentFor } from './trace-id';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

function traceIdOf(traceparent: string): string {
  const match = TRACEPARENT.exec(traceparent);
  expect(match).not.toBeNull();
  return match![1];
}

describe('traceparentFor', () => {
  it('carries a W3C trace id as it is, with a new span id each call', () => {
    const id = newTraceId();
    const first = traceparentFor(id);
    expect(traceIdOf(first)).toBe(id);
    expect(traceparentFor(id)).not.toBe(first);
  });

  it.each([
    ['a client trace id', 'order-42'],
    ['upper-case hex', 'ABCDEF0123456789ABCDEF0123456789'],
    ['31 hex characters', 'abcdef0123456789abcdef012345678'],
    ['a non-hex character', 'abcdef0123456789abcdef012345678g'],
    ['the all-zero id', '0'.repeat(32)],
  ])('maps %s to the start of its SHA-256', (_what, id) => {
    expect(traceIdOf(traceparentFor(id))).toBe(createHash('sha256').update(id).digest('hex').slice(0, 32));
  });
});

describe('resolveTraceId', () => {
  it("prefers the client's X-Trace-ID, then traceparent's trace id, else a new one", () => {
    const parent = `00-${'ab'.repeat(16)}-${'cd'.repeat(8)}-01`;
    expect(resolveTraceId('client-1', parent)).toBe('client-1');
    expect(resolveTraceId(undefined, parent)).toBe('ab'.repeat(16));
    expect(resolveTraceId('bad id with spaces', `00-${'0'.repeat(32)}-${'cd'.repeat(8)}-01`)).toMatch(/^[0-9a-f]{32}$/);
  });
});
