import { contextFromHeaders } from '../http/context-headers';
import { proxyArgs } from './proxy-input';

describe('proxyArgs', () => {
  it('has path (with a leading slash) and method', () => {
    expect(proxyArgs('a/b', 'GET', '', undefined)).toEqual({ path: '/a/b', method: 'GET' });
  });

  it('decodes query parameters and lists repeated ones in order', () => {
    expect(proxyArgs('q', 'GET', 'x=1&y=hello%20world&x=2&z=&plus=a+b&x=3', undefined)).toEqual({
      x: ['1', '2', '3'],
      y: 'hello world',
      z: '',
      plus: 'a b',
      path: '/q',
      method: 'GET',
    });
  });

  it.each([
    ['a=1&b=2', { a: '1', b: '2' }],
    ['a=1&a=2&a=3', { a: ['1', '2', '3'] }],
    ['flag&empty=&=v', { flag: '', empty: '', '': 'v' }],
    ['q=x%20y&plus=a+b', { q: 'x y', plus: 'a b' }],
    ['k%3D=v%26', { 'k=': 'v&' }],
  ])('reads the query %p, decoded, a repeated name as a list', (query, expected) => {
    expect(proxyArgs('p', 'GET', query, undefined)).toEqual({ ...expected, path: '/p', method: 'GET' });
  });

  it('adds the top-level fields of a JSON object body, which win over query parameters', () => {
    expect(proxyArgs('pay', 'POST', 'amount=1&note=q', { amount: 500, nested: { a: [1, 2] }, flag: false })).toEqual({
      amount: 500,
      note: 'q',
      nested: { a: [1, 2] },
      flag: false,
      path: '/pay',
      method: 'POST',
    });
  });

  it.each([
    ['the query', 'path=/etc&method=GET', undefined],
    ['the body', '', { path: '/etc/passwd', method: 'GET' }],
  ])('never lets %s override path or method', (_where, query, body) => {
    expect(proxyArgs('safe', 'DELETE', query, body)).toMatchObject({ path: '/safe', method: 'DELETE' });
  });
});

describe('contextFromHeaders', () => {
  it('names each X-Service-Context-<Name> header context.<name>, lower-cased with underscores', () => {
    expect(
      contextFromHeaders({
        'x-service-context-environment': 'production',
        'x-service-context-data-class': 'pii',
        'x-service-context-a-b-c': 'x',
        'x-service-action': 'read:x',
        'x-trace-id': 't',
        authorization: 'Bearer secret',
      }),
    ).toEqual({ environment: 'production', data_class: 'pii', a_b_c: 'x' });
  });

  it('is empty without context headers', () => {
    expect(contextFromHeaders({ host: 'h', 'x-service-contextual': 'no' })).toEqual({});
  });
});
