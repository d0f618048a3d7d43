import { isProxyUrl, parseProxyUrl } from './proxy-path';

describe('isProxyUrl', () => {
  it.each([
    ['/proxy', true],
    ['/proxy/', true],
    ['/proxy/a/b', true],
    ['/proxy?x=1', true],
    ['/proxyx', false],
    ['/proxies/a', false],
    ['/PROXY/a', false],
    ['/admin/proxy/a', false],
    ['/', false],
    ['', false],
    [undefined, false],
  ])('%s → %s', (url, expected) => {
    expect(isProxyUrl(url)).toBe(expected);
  });
});

describe('parseProxyUrl', () => {
  it.each([
    ['/proxy/a/b?x=1', 'a/b', 'x=1'],
    ['/proxy', '', ''],
    ['/proxy/', '', ''],
    ['/proxy?x=1&y=2', '', 'x=1&y=2'],
    ['/proxy//a', 'a', ''],
    ['/proxy/a/', 'a/', ''],
    ['/proxy/a/b?', 'a/b', ''],
    ['/proxy/a?p=../../etc&q=%2e%2e', 'a', 'p=../../etc&q=%2e%2e'],
    ['/proxy/caf%C3%A9/x%20y', 'caf%C3%A9/x%20y', ''],
    ['/proxy/./a', 'a', ''],
    ['/proxy/a/./b', 'a/b', ''],
    ['/proxy/a/b/../c', 'a/c', ''],
    ['/proxy/a/b/../../c', 'c', ''],
    ['/proxy/a/b/../', 'a/', ''],
    ['/proxy/a/b/./', 'a/b/', ''],
    ['/proxy/a/%2e/b', 'a/b', ''],
    ['/proxy/a/%2E%2e/b', 'b', ''],
    ['/proxy/a/.%2e/b', 'b', ''],
    ['/proxy/a/%2e./b?x=..', 'b', 'x=..'],
    ['/proxy/a/.../b', 'a/.../b', ''],
    ['/proxy/a/%2e%2e%2e/b', 'a/.../b', ''],
    // Escapes of unreserved characters are decoded (RFC 3986 6.2.2.2): `/%61dmin` is `/admin` to any upstream, and to policies.
    ['/proxy/%61dmin/users', 'admin/users', ''],
    ['/proxy/%41%5a%7e%2d%5F0%39', 'AZ~-_09', ''],
    ['/proxy/caf%c3%a9/x%20y', 'caf%C3%A9/x%20y', ''],
    ['/proxy/a/..b/c', 'a/..b/c', ''],
    ['/proxy/file.txt', 'file.txt', ''],
  ])('%s → path %s, query %s', (url, path, query) => {
    expect(parseProxyUrl(url)).toEqual({ path, query });
  });

  it.each([
    ['/proxy/..', /climb/],
    ['/proxy/../x', /climb/],
    ['/proxy/a/../../etc/passwd', /climb/],
    ['/proxy/%2e%2e/x', /climb/],
    ['/proxy/%2E%2E', /climb/],
    ['/proxy/a/%2E%2E/%2e%2e/x', /climb/],
    ['/proxy/./../x', /climb/],
    ['/proxy/a%2f..%2fb', /slash/],
    ['/proxy/a%2Fb', /slash/],
    ['/proxy/..%5c..%5cetc', /slash/],
    ['/proxy/a\\..\\b', /slash/],
  ])('refuses %s', (url, reason) => {
    const result = parseProxyUrl(url);
    expect(typeof result).toBe('string');
    expect(result).toMatch(reason);
  });
});
