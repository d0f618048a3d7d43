import fs from 'node:fs';
import path from 'node:path';
import type { KeyObject } from 'node:crypto';
import { publicKeyOfText } from '../core/edge-protocol/bundle-format';
import { parseSidecarLabels, SIDECAR_ID_FORMAT, SIDECAR_ID_RULE, SIDECAR_LABELS_RULE, SidecarLabels } from '../core/edge-protocol/sidecar-protocol';
import { ConfigError, GatewayMode, LogLevel, packageVersion } from '../core/config/app-config';
import { McpVariables, readAuditRedact, readMaxJsonBytes, readMcpVariables, readProxyVariables, readShutdownTimeoutMs, readTelemetrySettings, TelemetrySettings } from '../core/config/shared-settings';
import type { ProxySettings } from '../core/proxy/proxy-settings';
import { EnvReader, hasCredentials } from '../core/config/env-reader';


/** Largest BUNDLE_PUBLIC_KEY file read: a key is a few hundred bytes; a wrong path (a device, a log) must not be read whole. */
const MAX_KEY_FILE_BYTES = 64 * 1024;

/**
 * The edge sidecar's configuration (docs/sidecar.md "Configuration"), read once from the
 * environment. A missing or invalid variable stops the start with a message naming it.
 */
export class SidecarConfig {
  /** GATEWAY_URL (required): the central gateway bundles come from and audit goes to. */
  readonly gatewayUrl: string;
  /**
   * ADMIN_TOKEN (required): a sidecar token (POST /admin/sidecar-tokens: bundle fetch and audit
   * ingest only) or the organization's admin token, sent as X-Admin-Token either way.
   */
  readonly adminToken: string;
  /** MODE: `enforce` denies violations; `audit` records them and allows everything. */
  readonly mode: GatewayMode;
  /** BUNDLE_SYNC_INTERVAL: seconds between bundle fetches (jittered ±10%). */
  readonly syncIntervalMs: number;
  /** PORT and HOST: where /enforce, /health, /v1/* and /proxy/* listen. */
  readonly port: number;
  readonly host: string;
  /** CACHE_DIR: the verified bundle, the pinned gateway key, the sidecar id and the audit write-ahead log (its segment files). */
  readonly cacheDir: string;
  readonly logLevel: LogLevel;
  /**
   * BUNDLE_PUBLIC_KEY: the gateway's public key, given as the key itself (PEM, or a JWK as JSON)
   * or as the path of a file holding it; the only key bundles are trusted from. Unset: the key of
   * the first bundle is pinned in CACHE_DIR (trust on first use, warned about at every start).
   */
  readonly bundlePublicKey?: KeyObject;
  /** SIDECAR_ID: this sidecar's name in the fleet status; unset: generated once and kept in CACHE_DIR. */
  readonly sidecarId?: string;
  /** SIDECAR_LABELS: `name=value,…`, sent with every bundle fetch; a canary rollout to labelled sidecars reaches the sidecars whose labels it selects (docs/policies.md "Canary rollouts"). */
  readonly labels: SidecarLabels;
  /** AUDIT_BUFFER_MAX_BYTES: largest size of the audit write-ahead log (all its segment files) while the gateway is away or behind. */
  readonly auditBufferMaxBytes: number;
  /** AUDIT_DURABILITY: `write` (answer once the audit entry is written: survives kill -9) or `sync` (once fdatasynced: survives power loss). */
  readonly auditDurability: 'write' | 'sync';
  /** AUDIT_FORWARD_INTERVAL_MS: pause between forwarding batches once the buffer is empty. */
  readonly auditForwardIntervalMs: number;
  /** Service version reported by /health and the OpenAPI document. */
  readonly version: string;
  /** UPSTREAM_URL, UPSTREAM_TIMEOUT_MS, PROXY_MAX_BODY_BYTES, TRUSTED_PROXIES: the sidecar's own `/proxy/*`. */
  readonly proxy: ProxySettings;
  /** MAX_JSON_BYTES: JSON body limit of /enforce, the adapter endpoints and /mcp/*. */
  readonly maxJsonBytes: number;
  /** MCP_SERVERS, MCP_PIN: the sidecar's own /mcp/<name> (docs/mcp.md "On the sidecar"). */
  readonly mcp: McpVariables;
  /** AUDIT_REDACT: argument names whose values are stored as [redacted]. */
  readonly auditRedact: readonly string[];
  /** SHUTDOWN_TIMEOUT_MS: longest a SIGTERM/SIGINT shutdown may take. */
  readonly shutdownTimeoutMs: number;
  /** DECISION_TOKENS: `true` adds X-Service-Decision-Token, signed with the sidecar's own certified key, to every request its /proxy forwards after an allow (docs/security.md "Sidecars"). */
  readonly decisionTokens: boolean;
  /** METRICS_PORT, METRICS_TOKEN, LOG_REQUESTS, SLOW_REQUEST_MS, OTEL_*: as the gateway's (shared-settings.ts). */
  readonly telemetry: TelemetrySettings;

  private constructor(values: SidecarConfig) {
    Object.assign(this, values);
  }

  /** Reads and validates the environment; throws ConfigError naming every bad or missing variable. */
  static fromEnv(env: NodeJS.ProcessEnv = process.env): SidecarConfig {
    const read = new EnvReader(env);
    const gatewayUrl = read.url('GATEWAY_URL', ['http:', 'https:']);
    if (gatewayUrl === undefined && read.raw('GATEWAY_URL') === undefined) read.errors.push('GATEWAY_URL is required: the URL of the central gateway');
    const adminToken = read.optionalString('ADMIN_TOKEN');
    if (adminToken === undefined) read.errors.push('ADMIN_TOKEN is required: the admin token the sidecar fetches bundles with');
    const maxJsonBytes = readMaxJsonBytes(read);
    const port = read.int('PORT', 4000, 0, 65535);
    const values = {
      version: packageVersion(),
      proxy: { ...readProxyVariables(read), maxInspectedBytes: maxJsonBytes, trustedProxies: read.proxies('TRUSTED_PROXIES') },
      maxJsonBytes,
      mcp: readMcpVariables(read),
      auditRedact: readAuditRedact(read),
      shutdownTimeoutMs: readShutdownTimeoutMs(read),
      telemetry: readTelemetrySettings(read, port, 'agentgov-sidecar'),
      gatewayUrl: gatewayUrl ?? '',
      adminToken: adminToken ?? '',
      mode: read.oneOf('MODE', ['enforce', 'audit'] as const, 'enforce'),
      syncIntervalMs: read.int('BUNDLE_SYNC_INTERVAL', 60, 1, 86_400) * 1000,
      port,
      host: read.string('HOST', '0.0.0.0'),
      cacheDir: path.resolve(read.string('CACHE_DIR', '/cache')),
      logLevel: read.oneOf('LOG_LEVEL', ['debug', 'info', 'warn', 'error'] as const, 'info'),
      bundlePublicKey: readBundlePublicKey(read),
      sidecarId: read.optionalString('SIDECAR_ID'),
      labels: readSidecarLabels(read),
      auditBufferMaxBytes: read.int('AUDIT_BUFFER_MAX_BYTES', 256 * 1024 * 1024, 4096, Number.MAX_SAFE_INTEGER),
      auditDurability: read.oneOf('AUDIT_DURABILITY', ['write', 'sync'] as const, 'write'),
      decisionTokens: read.bool('DECISION_TOKENS', true),
      auditForwardIntervalMs: read.int('AUDIT_FORWARD_INTERVAL_MS', 1000, 10, 3_600_000),
    };
    if (values.sidecarId !== undefined && !SIDECAR_ID_FORMAT.test(values.sidecarId)) read.errors.push(`SIDECAR_ID: ${SIDECAR_ID_RULE}`);
    // fetch() throws for such a URL, which read as "gateway unreachable" for ever; and it would be logged.
    if (gatewayUrl !== undefined && hasCredentials(gatewayUrl)) {
      read.errors.push('GATEWAY_URL must not carry a user name or password (the sidecar authenticates to the gateway with ADMIN_TOKEN)');
    }
    if (read.errors.length > 0) throw new ConfigError([...new Set(read.errors)]);
    return new SidecarConfig(values as SidecarConfig);
  }
}

/** SIDECAR_LABELS, or {} when unset. */
function readSidecarLabels(read: EnvReader): SidecarLabels {
  const text = read.optionalString('SIDECAR_LABELS');
  if (text === undefined) return {};
  const parsed = parseSidecarLabels(text);
  if ('labels' in parsed) return parsed.labels;
  read.errors.push(`SIDECAR_LABELS: ${parsed.problem} (${SIDECAR_LABELS_RULE})`);
  return {};
}

/** BUNDLE_PUBLIC_KEY as a key: inline when it starts like PEM or JSON, else read from the file it names. */
function readBundlePublicKey(read: EnvReader): KeyObject | undefined {
  const value = read.raw('BUNDLE_PUBLIC_KEY');
  if (value === undefined) return undefined;
  const inline = value.startsWith('-----BEGIN') || value.startsWith('{');
  const origin = inline ? 'BUNDLE_PUBLIC_KEY' : `BUNDLE_PUBLIC_KEY file ${printablePath(value)}`;
  let text = value;
  if (!inline) {
    const file = readKeyFile(value);
    if (file.problem !== undefined) {
      read.errors.push(`${origin}: ${file.problem} (BUNDLE_PUBLIC_KEY is a PEM key, a JWK as JSON, or the path of a file holding one)`);
      return undefined;
    }
    text = file.text;
  }
  try {
    return publicKeyOfText(text);
  } catch (error) {
    read.errors.push(`${origin}: ${(error as Error).message}; expected the gateway's Ed25519 or P-256 public key (PEM, or a JWK as JSON)`);
    return undefined;
  }
}

function readKeyFile(file: string): { text: string; problem?: undefined } | { problem: string } {
  let fd: number;
  try {
    fd = fs.openSync(path.resolve(file), 'r');
  } catch (error) {
    return { problem: `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  try {
    const buffer = Buffer.alloc(MAX_KEY_FILE_BYTES + 1);
    const length = fs.readSync(fd, buffer, 0, buffer.length, null);
    if (length > MAX_KEY_FILE_BYTES) return { problem: `larger than ${MAX_KEY_FILE_BYTES / 1024} KiB, not a key` };
    return { text: buffer.subarray(0, length).toString('utf8') };
  } catch (error) {
    return { problem: `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  } finally {
    fs.closeSync(fd);
  }
}

/** The path for an error message; a value that looks like a key's text (a key mistyped) is not echoed. */
function printablePath(value: string): string {
  return value.length <= 512 && !/[\r\n]/.test(value) ? JSON.stringify(value) : '(the value is not shown)';
}
