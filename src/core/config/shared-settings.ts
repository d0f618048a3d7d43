import type { EnvReader } from './env-reader';

/*
 * The variables the gateway and the edge sidecar both read, with one definition each: the same
 * name, default and bounds in either process (docs/configuration.md).
 */

/** The governed proxy's variables, as `/proxy/*` on either process reads them. */
export interface ProxyVariables {
  /** UPSTREAM_URL: target of /proxy/*. */
  upstreamUrl?: string;
  /** UPSTREAM_TIMEOUT_MS: time allowed for the upstream's response headers and body gaps. */
  timeoutMs: number;
  /** PROXY_MAX_BODY_BYTES: largest request body streamed through /proxy/*. */
  maxBodyBytes: number;
}

export function readProxyVariables(read: EnvReader): ProxyVariables {
  return {
    upstreamUrl: read.url('UPSTREAM_URL', ['http:', 'https:']),
    timeoutMs: read.int('UPSTREAM_TIMEOUT_MS', 30000, 1, 3_600_000),
    maxBodyBytes: read.int('PROXY_MAX_BODY_BYTES', 50 * 1024 * 1024, 0, Number.MAX_SAFE_INTEGER),
  };
}

/** MAX_JSON_BYTES: JSON body limit of the APIs, and of a proxied body a policy reads. */
export function readMaxJsonBytes(read: EnvReader): number {
  return read.int('MAX_JSON_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024);
}

/** AUDIT_REDACT: argument names whose values are stored as [redacted], lower-cased. */
export function readAuditRedact(read: EnvReader): string[] {
  return read.list('AUDIT_REDACT', ['password', 'secret', 'token', 'authorization', 'api_key']).map((name) => name.toLowerCase());
}

/** SHUTDOWN_TIMEOUT_MS: longest a SIGTERM/SIGINT shutdown may take before the process is forced out (exit 1). 25 s: inside the 30 s Kubernetes gives between SIGTERM and SIGKILL. */
export function readShutdownTimeoutMs(read: EnvReader): number {
  return read.int('SHUTDOWN_TIMEOUT_MS', 25_000, 1, 3_600_000);
}

/** MCP_SERVERS, MCP_PIN and MCP_ALLOWED_HOSTS: the MCP servers served at /mcp/<name>, how what they list is pinned, and the names they answer to (docs/mcp.md). */
export interface McpVariables {
  /** MCP_SERVERS: a JSON or YAML file naming the upstream MCP servers. */
  serversFile?: string;
  /** MCP_PIN: `on` or `strict` hold a definition that changed since it was pinned, until an admin accepts it; `off` does not pin. */
  pin: boolean;
  /** MCP_PIN=strict: a definition new on a server whose others are pinned is held too (`on`: pinned and alerted). */
  holdNewcomers: boolean;
  /**
   * MCP_ALLOWED_HOSTS: host names (with or without a port) the `Host` and `Origin` of an MCP
   * request may name, beside PUBLIC_URL's host and the loopback names (DNS-rebinding protection).
   */
  allowedHosts: string[];
}

export function readMcpVariables(read: EnvReader): McpVariables {
  const pin = read.oneOf('MCP_PIN', ['on', 'off', 'strict'] as const, 'on');
  return { serversFile: read.optionalString('MCP_SERVERS'), pin: pin !== 'off', holdNewcomers: pin === 'strict', allowedHosts: read.list('MCP_ALLOWED_HOSTS', []).map((host) => host.toLowerCase()) };
}

/** Metrics, traces and request logs, as either process reads them (docs/observability.md). */
export interface TelemetrySettings {
  /** METRICS_PORT: a port of its own serving `GET /metrics` (bound to HOST); unset: /metrics on the main port, only with METRICS_TOKEN. */
  metricsPort?: number;
  /** METRICS_TOKEN: the bearer token `/metrics` asks for; unset with METRICS_PORT unset, metrics are not served (nor collected). */
  metricsToken?: string;
  /** LOG_REQUESTS: one `access` log line per proxied, PDP and `/enforce` request. */
  logRequests: boolean;
  /** SLOW_REQUEST_MS: a request answered slower than this is logged as a warning; 0 turns the warning off. */
  slowRequestMs: number;
  /** OTEL_EXPORTER_OTLP_ENDPOINT: base URL of an OTLP/HTTP receiver; spans go to `<it>/v1/traces`. Unset: no traces, nothing of OpenTelemetry loaded. */
  tracesUrl?: string;
  /** OTEL_EXPORTER_OTLP_HEADERS: `name=value` pairs, comma-separated, sent with every export (a collector's API key). */
  tracesHeaders: Record<string, string>;
  /** OTEL_SERVICE_NAME: the `service.name` of the spans. */
  serviceName: string;
}

/** True when /metrics is served somewhere: on METRICS_PORT, or on the main port behind METRICS_TOKEN. */
export function metricsServed(settings: TelemetrySettings): boolean {
  return settings.metricsPort !== undefined || settings.metricsToken !== undefined;
}

export function readTelemetrySettings(read: EnvReader, mainPort: number, serviceName: string): TelemetrySettings {
  const metricsPort = read.raw('METRICS_PORT') === undefined ? undefined : read.int('METRICS_PORT', 0, 1, 65535);
  if (metricsPort !== undefined && metricsPort === mainPort) read.errors.push(`METRICS_PORT=${metricsPort}: must differ from PORT (the metrics port is a listener of its own)`);
  const metricsToken = read.optionalString('METRICS_TOKEN');
  if (metricsToken !== undefined && metricsToken.length < 16) read.errors.push('METRICS_TOKEN: must be at least 16 characters');
  const base = read.url('OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']);
  return {
    metricsPort: metricsPort === 0 ? undefined : metricsPort,
    metricsToken,
    logRequests: read.bool('LOG_REQUESTS', false),
    slowRequestMs: read.int('SLOW_REQUEST_MS', 1000, 0, 3_600_000),
    tracesUrl: base === undefined ? undefined : `${base}/v1/traces`,
    tracesHeaders: readHeaderList(read, 'OTEL_EXPORTER_OTLP_HEADERS'),
    serviceName: read.string('OTEL_SERVICE_NAME', serviceName),
  };
}

/** `name=value,name2=value2` (values URL-encoded, as the OpenTelemetry specification has them). */
function readHeaderList(read: EnvReader, name: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const item of read.list(name, [])) {
    const equals = item.indexOf('=');
    const key = equals <= 0 ? '' : item.slice(0, equals).trim();
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(key)) {
      // The value may be a secret: only the item's position is named.
      read.errors.push(`${name}: expected name=value pairs, comma-separated`);
      return {};
    }
    try {
      headers[key.toLowerCase()] = decodeURIComponent(item.slice(equals + 1).trim());
    } catch {
      read.errors.push(`${name}: the value of ${key} is not valid URL encoding`);
      return {};
    }
  }
  return headers;
}
