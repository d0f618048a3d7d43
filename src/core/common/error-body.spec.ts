import { status as GrpcStatus } from '@grpc/grpc-js';
import { QueryFailedError } from 'typeorm';
import { errorBody, grpcErrorOf } from './error-body';

function systemError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code });
}

function queryFailed(code: string, message: string): QueryFailedError {
  return new QueryFailedError('SELECT 1', [], Object.assign(new Error(message), { code, severity: 'ERROR' }));
}

describe('errorBody and grpcErrorOf', () => {
  it.each([
    ['the connection refused', systemError('ECONNREFUSED')],
    ['the connection reset', systemError('ECONNRESET')],
    ['a full pool past its timeout', new Error('timeout exceeded when trying to connect')],
    ['the connection lost mid-query', new QueryFailedError('SELECT 1', [], new Error('Connection terminated unexpectedly'))],
    ['the server shutting down', queryFailed('57P01', 'terminating connection due to administrator command')],
    ['a refusal while connecting', Object.assign(new Error('database "x" is not currently accepting connections'), { code: '55000', severity: 'FATAL' })],
  ])('answers 503 and UNAVAILABLE for %s', (_label, error) => {
    expect(errorBody(error, 'trace-1')).toEqual({ status: 503, body: { error: 'service_unavailable', message: 'The database is unavailable; try again shortly' }, unexpected: false });
    expect(grpcErrorOf(error).code).toBe(GrpcStatus.UNAVAILABLE);
  });

  it('keeps a value the database refuses a 400 and any other failure a 500 with the trace id', () => {
    expect(errorBody(queryFailed('22P05', 'unsupported Unicode escape sequence')).status).toBe(400);
    const missingTable = errorBody(queryFailed('42P01', 'relation "x" does not exist'), 'trace-1');
    expect(missingTable).toEqual({ status: 500, body: { error: 'internal_error', message: 'Internal server error', trace_id: 'trace-1' }, unexpected: true });
    expect(grpcErrorOf(new Error('boom')).code).toBe(GrpcStatus.INTERNAL);
  });
});
