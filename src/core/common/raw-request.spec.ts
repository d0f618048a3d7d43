import type { IncomingMessage } from 'node:http';
import { rawHeader, requestTraceId } from './raw-request';

function request(rawHeaders: string[]): IncomingMessage {
  return { rawHeaders } as unknown as IncomingMessage;
}

describe('raw request headers', () => {
  it('finds a header whatever its case, joins a repeated X-Trace-ID and keeps the first Authorization, as request.headers does', () => {
    const raw = request(['Host', 'x', 'AUTHORIZATION', 'Bearer a', 'X-Trace-Id', 't1', 'authorization', 'Bearer b', 'x-trace-id', 't2']);
    expect(rawHeader(raw, 'authorization', false)).toBe('Bearer a');
    expect(rawHeader(raw, 'x-trace-id', true)).toBe('t1, t2');
    expect(rawHeader(raw, 'traceparent', true)).toBeUndefined();
  });

  it('takes the trace id from X-Trace-ID, else traceparent, else makes one', () => {
    expect(requestTraceId(request(['X-Trace-ID', 'abc']))).toBe('abc');
    expect(requestTraceId(request(['traceparent', `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`]))).toBe('a'.repeat(32));
    expect(requestTraceId(request([]))).toMatch(/^[0-9a-f]{32}$/);
  });
});
