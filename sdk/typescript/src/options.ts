import os from 'node:os';
import path from 'node:path';
import { MAX_AUDIT_BATCH } from './audit-event';
import { checkedSessionId } from './session';

export type FailureMode = 'fail-closed' | 'fail-open';

/**
 * When an audit event is durable: `batch` (default) once per audit window (group commit: one
 * fdatasync for the window's events, just before they are sent), so a crash of the machine (not
 * of the process) loses at most the events of the last auditFlushMs; `sync` before audit() and
 * guard() resolve (one fdatasync shared by the events recorded at the same time).
 */
export type AuditDurability = 'batch' | 'sync';

/** What a single plugin may set differently from the client-wide options. */
export interface PluginOptions {
  trustTier?: string;
  timeoutSeconds?: number;
  throwOnDenied?: boolean;
}

/** Options of a GovernanceClient (README "Options", in TypeScript casing). */
export interface GovernanceOptions {
  /** The gateway's HTTP address, e.g. `http://gateway:3000` (HTTP fallback and audit). */
  gatewayUrl: string;
  /** An adapter API key (POST /admin/api-keys). */
  apiKey: string;
  /** The agent the calls are made for (`agent_<id>`). */
  agentId: string;
  /** The adapter's tier hint sent with every check. Default `standard`. */
  defaultTrustTier?: string;
  /** Throw PolicyDeniedError on a denial (default), or return a soft denial. */
  throwOnDenied?: boolean;
  /** Time allowed for each gateway call. Default 5. */
  timeoutSeconds?: number;
  /** The PDP's gRPC address. Default: gatewayUrl's host, port 50051. */
  grpcAddress?: string;
  /** `fail-closed` (default): no decision, no call. `fail-open`: allow and audit the failure. */
  failureMode?: FailureMode;
  /** Per-plugin overrides of trustTier, timeoutSeconds and throwOnDenied. */
  plugins?: Record<string, PluginOptions>;
  /** Reuse cacheable decisions until their TTL or a Subscribe event. Default true. */
  cache?: boolean;
  /**
   * The audit write-ahead file, for this client alone. Default: a file of this client's own in
   * auditDirectory (`audit-<agentId>-<pid>-<random>.wal`), removed on close when empty; at start
   * a client also sends what the agent's files there that no live client holds (those of
   * processes that ended) left unacknowledged.
   */
  auditLogPath?: string;
  /** Where the default write-ahead files are kept. Default `<tmpdir>/agentgov-sdk`; a persistent volume keeps them across a container's restarts. */
  auditDirectory?: string;
  /** When an audit event is durable: `batch` (default, once per auditFlushMs) or `sync` (before audit() resolves). */
  auditDurability?: AuditDurability;
  /** Send queued audit events once this many are waiting, in one batch. Default 50, at most 500. */
  auditBatchSize?: number;
  /** Send queued audit events at least this often, in milliseconds. Default 1000. */
  auditFlushMs?: number;
  /** After gRPC could not connect, checks use HTTP this long before trying gRPC again. Default 5. */
  grpcRetrySeconds?: number;
  /**
   * How long guard() waits for a person to decide a call a `require_approval` rule holds, in
   * seconds (docs/approvals.md). Default 300 (the rule's default timeout), at most 3600; 0 does
   * not wait: the pending call is treated as denied at once.
   */
  approvalWaitSeconds?: number;
  /**
   * The session the calls belong to (docs/policies.md "Sessions"): 1 to 128 characters of
   * `A-Z a-z 0-9 . _ : -`. Default: none, the agent's own scope. inSession() names one for the
   * calls of a flow instead.
   */
  sessionId?: string;
}

/**
 * The options with every default filled in; auditLogPath null: a file of its own in
 * auditDirectory; sessionId '': none named.
 */
export type ResolvedOptions = Required<Omit<GovernanceOptions, 'plugins' | 'auditLogPath'>> & { plugins: Record<string, PluginOptions>; auditLogPath: string | null };

/** What applies to one call of `plugin`. */
export interface CallOptions {
  trustTier: string;
  timeoutMs: number;
  throwOnDenied: boolean;
}

/** Checks the required options and fills in the defaults. */
export function resolveOptions(options: GovernanceOptions): ResolvedOptions {
  for (const name of ['gatewayUrl', 'apiKey', 'agentId'] as const) {
    if (typeof options[name] !== 'string' || options[name] === '') throw new TypeError(`${name} is required`);
  }
  const gatewayUrl = options.gatewayUrl.replace(/\/+$/, '');
  return {
    gatewayUrl,
    apiKey: options.apiKey,
    agentId: options.agentId,
    defaultTrustTier: options.defaultTrustTier ?? 'standard',
    throwOnDenied: options.throwOnDenied ?? true,
    timeoutSeconds: positive(options.timeoutSeconds, 'timeoutSeconds', MAX_TIMER_MS / 1000) ?? 5,
    grpcAddress: options.grpcAddress ?? `${new URL(gatewayUrl).hostname}:50051`,
    failureMode: failureMode(options.failureMode),
    plugins: options.plugins ?? {},
    cache: options.cache ?? true,
    auditLogPath: options.auditLogPath ?? null,
    auditDirectory: options.auditDirectory ?? path.join(os.tmpdir(), 'agentgov-sdk'),
    auditDurability: durability(options.auditDurability),
    auditBatchSize: batchSize(options.auditBatchSize) ?? 50,
    auditFlushMs: positive(options.auditFlushMs, 'auditFlushMs', MAX_TIMER_MS) ?? 1000,
    grpcRetrySeconds: positive(options.grpcRetrySeconds, 'grpcRetrySeconds') ?? 5,
    approvalWaitSeconds: approvalWait(options.approvalWaitSeconds),
    sessionId: options.sessionId === undefined ? '' : checkedSessionId(options.sessionId, 'sessionId'),
  };
}

/** The options for a call of `plugin`: its overrides over the client-wide values. */
export function callOptions(options: ResolvedOptions, plugin: string): CallOptions {
  const override = Object.hasOwn(options.plugins, plugin) ? options.plugins[plugin] : {};
  return {
    trustTier: override.trustTier ?? options.defaultTrustTier,
    timeoutMs: (positive(override.timeoutSeconds, `plugins.${plugin}.timeoutSeconds`, MAX_TIMER_MS / 1000) ?? options.timeoutSeconds) * 1000,
    throwOnDenied: override.throwOnDenied ?? options.throwOnDenied,
  };
}

/** Node runs a timer set past this after 1 ms (TimeoutOverflowWarning): every call would time out at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

function positive(value: number | undefined, name: string, max = Number.MAX_VALUE): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number`);
  if (value > max) throw new TypeError(`${name} must be at most ${max}`);
  return value;
}

/** A batch takes whole events (one of 0.5 took none, and the sender looped on it without end), and at most what POST /v1/audit takes. */
function batchSize(value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 1 || value > MAX_AUDIT_BATCH) throw new TypeError(`auditBatchSize must be a whole number from 1 to ${MAX_AUDIT_BATCH}`);
  return value;
}

function durability(value: string | undefined): AuditDurability {
  if (value === undefined || value === 'batch' || value === 'sync') return value ?? 'batch';
  throw new TypeError(`auditDurability must be batch or sync, not ${value}`);
}

/** The longest approvalWaitSeconds: a guarded call blocks its caller for as long as it waits. */
export const MAX_APPROVAL_WAIT_SECONDS = 3600;

function approvalWait(value: number | undefined): number {
  if (value === undefined) return 300;
  if (!Number.isFinite(value) || value < 0 || value > MAX_APPROVAL_WAIT_SECONDS) throw new TypeError(`approvalWaitSeconds must be between 0 and ${MAX_APPROVAL_WAIT_SECONDS}`);
  return value;
}

function failureMode(value: string | undefined): FailureMode {
  if (value === undefined || value === 'fail-closed' || value === 'fail-open') return value ?? 'fail-closed';
  throw new TypeError(`failureMode must be fail-closed or fail-open, not ${value}`);
}
