/** The part of a `/proxy/...` URL the upstream receives. */
export interface ProxyTarget {
  /** Normalised path after `/proxy/`, without a leading slash (`a/b`): escapes of unreserved characters decoded, the others kept (upper-case hex). */
  path: string;
  /** Query string without `?`, or ''. */
  query: string;
}

export const PROXY_PREFIX = '/proxy';

/** True for URLs served by the proxy: `/proxy`, `/proxy/...`, `/proxy?...`. */
export function isProxyUrl(url: string | undefined): boolean {
  if (url === undefined || !url.startsWith(PROXY_PREFIX)) return false;
  const next = url.charCodeAt(PROXY_PREFIX.length);
  return Number.isNaN(next) || next === 47 /* / */ || next === 63 /* ? */;
}

/**
 * Splits and normalises a proxy URL. Percent-escapes of unreserved characters are decoded and
 * the rest upper-cased (RFC 3986 6.2.2): `/%61dmin/users` is `/admin/users` to any upstream, so
 * it must be to the policies too, or an escape walks past a rule on `*admin*`. Dot segments
 * (also percent-encoded ones such as %2e%2e) are resolved, and a path that would climb above the
 * proxy root is refused, as are encoded slashes and backslashes an upstream might decode into
 * separators. Returns a reason string when the path is refused.
 */
export function parseProxyUrl(url: string): ProxyTarget | string {
  // A client never sends a fragment; an upstream that cuts the target at `#` would route a path the policies never saw.
  if (url.includes('#')) return 'the request target must not contain "#"';
  const queryAt = url.indexOf('?');
  const rawPath = url.slice(PROXY_PREFIX.length, queryAt === -1 ? url.length : queryAt);
  const query = queryAt === -1 ? '' : url.slice(queryAt + 1);
  if (!needsNormalising(rawPath)) return { path: rawPath.replace(/^\/+/, ''), query };
  if (/%2f|%5c|\\/i.test(rawPath)) return 'the path must not contain encoded slashes or backslashes';
  const path = rawPath.includes('%') ? rawPath.replace(PERCENT_ESCAPE, normalEscape) : rawPath;
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    const dots = dotSegment(segment);
    if (dots === 1) continue;
    if (dots === 2) {
      if (segments.length === 0) return 'the path must not climb above /proxy/';
      segments.pop();
      continue;
    }
    if (segment !== '' || segments.length > 0) segments.push(segment);
  }
  const trailingSlash = path.endsWith('/') && segments.length > 0 && segments[segments.length - 1] !== '';
  return { path: segments.join('/') + (trailingSlash ? '/' : ''), query };
}

const PERCENT_ESCAPE = /%([0-9a-fA-F]{2})/g;
// RFC 3986 2.3: ALPHA, DIGIT, '-', '.', '_', '~'.
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** An unreserved character for its escape; any other escape in upper case, as RFC 3986 6.2.2.1 normalises it. */
function normalEscape(escape: string, hex: string): string {
  const character = String.fromCharCode(parseInt(hex, 16));
  return UNRESERVED.test(character) ? character : escape.toUpperCase();
}

// The common path has no dots, percent signs or backslashes: skip the segment walk.
function needsNormalising(path: string): boolean {
  for (let i = 0; i < path.length; i++) {
    const code = path.charCodeAt(i);
    if (code === 46 /* . */ || code === 37 /* % */ || code === 92 /* \ */) return true;
  }
  return false;
}

/** 1 for `.`, 2 for `..` (plain or percent-encoded), 0 otherwise. */
function dotSegment(segment: string): 0 | 1 | 2 {
  if (segment.length > 6) return 0;
  const decoded = segment.replace(/%2e/gi, '.');
  if (decoded === '.') return 1;
  if (decoded === '..') return 2;
  return 0;
}
