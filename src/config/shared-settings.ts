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

/** MCP_SERVERS and MCP_PIN: the MCP servers served at /mcp/<name> and whether their tools are pinned (docs/mcp.md). */
export interface McpVariables {
  /** MCP_SERVERS: a JSON or YAML file naming the upstream MCP servers. */
  serversFile?: string;
  /** MCP_PIN: `on` holds a tool whose definition changed since it was pinned, until an admin accepts it; `off` does not pin. */
  pin: boolean;
}

export function readMcpVariables(read: EnvReader): McpVariables {
  return { serversFile: read.optionalString('MCP_SERVERS'), pin: read.oneOf('MCP_PIN', ['on', 'off'] as const, 'on') === 'on' };
}
