import proxyaddr from 'proxy-addr';
import net from 'node:net';
import { parseDuration } from '../policy-engine/duration';

/**
 * Reads typed values from an environment map and collects every problem, so a bad
 * configuration is reported all at once rather than one restart per mistake.
 */
export class EnvReader {
  readonly errors: string[] = [];

  constructor(private readonly env: NodeJS.ProcessEnv) {}

  /** Raw value, with empty strings treated as unset. */
  raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  }

  string(name: string, fallback: string): string {
    return this.raw(name) ?? fallback;
  }

  optionalString(name: string): string | undefined {
    return this.raw(name);
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const parsed = Number(value);
    if (!/^-?\d+$/.test(value) || parsed < min || parsed > max) {
      this.errors.push(`${name}=${JSON.stringify(value)}: expected a whole number from ${min} to ${max}`);
      return fallback;
    }
    return parsed;
  }

  bool(name: string, fallback: boolean): boolean {
    const value = this.raw(name)?.toLowerCase();
    if (value === undefined) return fallback;
    if (['true', '1', 'yes'].includes(value)) return true;
    if (['false', '0', 'no'].includes(value)) return false;
    this.errors.push(`${name}=${JSON.stringify(value)}: expected true or false`);
    return fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if ((allowed as readonly string[]).includes(value)) return value as T;
    this.errors.push(`${name}=${JSON.stringify(value)}: expected one of ${allowed.join(', ')}`);
    return fallback;
  }

  /** Comma-separated list, each item one of `allowed` when given. */
  list(name: string, fallback: string[], allowed?: readonly string[]): string[] {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const items = value.split(',').map((item) => item.trim()).filter((item) => item !== '');
    const bad = allowed ? items.filter((item) => !allowed.includes(item)) : [];
    if (bad.length > 0) {
      this.errors.push(`${name}: unknown value(s) ${bad.join(', ')}; expected items of ${allowed!.join(', ')}`);
      return fallback;
    }
    return items;
  }

  /** A list of proxy addresses (IPs, CIDR ranges, `loopback`, `linklocal`, `uniquelocal`), as proxy-addr reads them. */
  proxies(name: string): string[] {
    const items = this.list(name, []);
    try {
      proxyaddr.compile(items);
    } catch (error) {
      this.errors.push(`${name}: ${(error as Error).message}; expected IP addresses or CIDR ranges, comma-separated`);
      return [];
    }
    return items;
  }

  /** A positive duration (`90s`, `30m`, `24h`, `7d`) in milliseconds, at least `minMs`. */
  durationMs(name: string, fallback: string, minMs = 1000): number {
    const value = this.raw(name) ?? fallback;
    let parsed: number | undefined;
    try {
      parsed = parseDuration(value);
    } catch {
      parsed = undefined;
    }
    if (parsed !== undefined && parsed >= minMs) return parsed;
    this.errors.push(`${name}=${JSON.stringify(value)}: expected a duration like 90s, 30m, 24h or 7d (at least ${minMs / 1000}s)`);
    return parseDuration(fallback);
  }

  /** A URL of one of `protocols`; `trimSlash`: without trailing slashes (a base URL that paths are appended to). */
  url(name: string, protocols: readonly string[], trimSlash = true): string | undefined {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    try {
      const parsed = new URL(value);
      if (protocols.includes(parsed.protocol)) return trimSlash ? value.replace(/\/+$/, '') : value;
    } catch {
      // reported below
    }
    this.errors.push(`${name}=${JSON.stringify(redactUrl(value))}: expected a URL starting with ${protocols.join(' or ')}`);
    return undefined;
  }

  /**
   * A host name or IP address, nothing more: a URL given instead (`smtp://user:password@host:587`)
   * was used as a host name, failed every connection, and showed its password in the CLI, in
   * every failure logged and in `ags alerts` output. An IPv6 address may come in URL brackets
   * (`[::1]`); they are removed, as the name lookup of nodemailer (and net.connect) takes none.
   */
  host(name: string, hint: string): string | undefined {
    const value = this.raw(name);
    if (value === undefined || HOST_NAME.test(value)) return value;
    const address = /^\[(.*)\]$/.exec(value)?.[1] ?? value;
    if (net.isIP(address) !== 0) return address;
    this.errors.push(`${name}=${JSON.stringify(redactUrl(value))}: expected a host name or IP address, ${hint}`);
    return undefined;
  }

  /**
   * A URL that is only scheme, host and port: the payment provider's SDK takes no more, so a
   * path (`https://proxy.internal/stripe`) was dropped and every call went to the proxy's root.
   */
  origin(name: string, protocols: readonly string[]): string | undefined {
    const value = this.url(name, protocols);
    if (value === undefined) return undefined;
    const parsed = new URL(value);
    if (parsed.pathname === '/' && parsed.search === '' && parsed.hash === '' && !hasCredentials(value)) return value;
    this.errors.push(`${name}=${JSON.stringify(redactUrl(value))}: expected scheme://host[:port] only, without a path, query or credentials`);
    return undefined;
  }

  /**
   * The URL of an endpoint the gateway posts to, exactly as given: a receiver may route `/hooks/`
   * and `/hooks` differently (or redirect, which counts as a failure), and a query may end in `/`.
   */
  endpointUrl(name: string, protocols: readonly string[]): string | undefined {
    const value = this.url(name, protocols, false);
    if (value === undefined || !hasCredentials(value)) return value;
    this.errors.push(`${name}=${JSON.stringify(redactUrl(value))}: ${NO_CREDENTIALS}`);
    return undefined;
  }
}

/** A DNS name: dot-separated labels of letters, digits, `-` and `_` (a trailing dot allowed). */
const HOST_NAME = /^(?=.{1,253}\.?$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i;

/** Whether a (valid) URL carries a user name or password. */
export function hasCredentials(url: string): boolean {
  const parsed = new URL(url);
  return parsed.username !== '' || parsed.password !== '';
}

/** Why a URL with `user:password@` is refused: nothing sends them, and dropping them silently hides the mistake. */
const NO_CREDENTIALS = 'credentials in the URL (user:password@) are not supported: they would not be sent; remove them (the webhook is authenticated by ALERT_WEBHOOK_SECRET, a chat webhook by its URL)';

/**
 * Hides credentials, path and query of a URL before it appears in an error message: webhooks carry
 * their secret there (a chat webhook's path, a `?token=`). The URL is invalid there, so its
 * userinfo may hold `/` or `@`: everything up to the last `@` goes (over-hiding is harmless);
 * scheme and host are kept to show what was wrong.
 */
export function redactUrl(value: string): string {
  const withoutCredentials = value.replace(/^([a-z][a-z0-9+.-]*:\/*)?[^]*@/i, '$1***@');
  // Scheme and slashes taken first: a single pattern would backtrack into them and take `redis:/` for the host.
  const scheme = /^[a-z][a-z0-9+.-]*:\/*/i.exec(withoutCredentials)?.[0] ?? '';
  const hostEnd = withoutCredentials.slice(scheme.length).search(/[/?#]/);
  return hostEnd < 0 ? withoutCredentials : `${withoutCredentials.slice(0, scheme.length + hostEnd)}/***`;
}
