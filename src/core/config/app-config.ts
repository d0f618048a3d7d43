import fs from 'node:fs';
import path from 'node:path';
import { EnvReader } from './env-reader';
import { PLAN_IDS, PlanId } from './plans';

export type GatewayMode = 'enforce' | 'audit';
import type { LogLevel } from '../logging/logger';
import { CredentialKeys, readCredentialKeys } from './credential-keys';
import { McpVariables, readAuditRedact, readMaxJsonBytes, readMcpVariables, readProxyVariables, readShutdownTimeoutMs, readTelemetrySettings, TelemetrySettings } from './shared-settings';

export type { LogLevel };

/** Raised at boot when the environment is invalid; lists every problem. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

/**
 * The gateway's configuration, read once from the environment (docs/configuration.md) and
 * injected everywhere else. Nothing outside src/core/config reads process.env.
 */
export class AppConfig {
  /** Service version reported by /json and /health. */
  readonly version: string;
  readonly mode: GatewayMode;
  readonly logLevel: LogLevel;
  readonly http: {
    /** PORT: HTTP port for admin, analytics, billing, proxy and PDP HTTP. */
    port: number;
    /** HOST: bind address. */
    host: string;
    /** PUBLIC_URL: external base URL, used in links and as the agent-token issuer. */
    publicUrl: string;
    /** True when PUBLIC_URL was set, not derived from PORT. */
    publicUrlSet: boolean;
    /** MAX_JSON_BYTES: JSON body limit of the admin, billing and PDP APIs. */
    maxJsonBytes: number;
    /** RATE_LIMIT_RPM: per-client request rate for billing endpoints. */
    rateLimitRpm: number;
    /**
     * TRUSTED_PROXIES: addresses (IPs, CIDR ranges, `loopback`) of the load balancers in front
     * of the gateway; only their X-Forwarded-For is believed. Empty: nobody's.
     */
    trustedProxies: string[];
  };
  readonly shutdown: {
    /** SHUTDOWN_TIMEOUT_MS: longest a SIGTERM/SIGINT shutdown may take before the process is forced out (exit 1). */
    timeoutMs: number;
  };
  readonly grpc: {
    /** PDP_GRPC_PORT: gRPC PDP port; 0 disables it. */
    port: number;
  };
  readonly database: {
    /** DATABASE_URL: PostgreSQL; unset means the embedded PGlite in dataDir. */
    url?: string;
    /** DATA_DIR: embedded database and generated keys. */
    dataDir: string;
    /** DATABASE_POOL_MAX: PostgreSQL pool size (the embedded database always uses one connection). */
    poolMax: number;
  };
  readonly auth: {
    /** ADMIN_TOKEN: admin token of org_default; generated and printed once when unset. */
    adminToken?: string;
    /** DEFAULT_PLAN: plan of the bootstrap organization. */
    defaultPlan: PlanId;
    /** AGENT_TOKEN_TTL: lifetime of agent tokens. */
    agentTokenTtlMs: number;
    /** SIGNING_KEY_FILE: Ed25519 or P-256 private key (PEM); generated when missing. */
    signingKeyFile: string;
  };
  readonly proxy: {
    /** UPSTREAM_URL: target of /proxy/*. */
    upstreamUrl?: string;
    /** UPSTREAM_TIMEOUT_MS: time allowed for the upstream's response headers and body gaps. */
    timeoutMs: number;
    /** PROXY_MAX_BODY_BYTES: largest request body streamed through /proxy/*. */
    maxBodyBytes: number;
  };
  readonly policies: {
    /** POLICIES_FILE: loaded into the bootstrap organization at start and on SIGHUP (not while POLICIES_GIT_URL is set). */
    file: string;
    /** POLICIES_GIT_*: the bootstrap organization's policies kept in step with a git repository (docs/policies.md "Policies from git"). */
    git?: PoliciesGitSettings;
    /**
     * POLICIES_GIT_LOCAL_ROOT: the folder under which an organization's git source configured
     * through the admin API may be a local path (or `file://` URL); unset, the API takes network
     * URLs only, since a local path reads the gateway's own disk.
     */
    gitLocalRoot?: string;
    /** CANARY_CHECK_INTERVAL (default 10s): how often running canary rollouts are compared (docs/policies.md "Canary rollouts"). */
    canaryCheckMs: number;
  };
  readonly redis: {
    /** REDIS_URL: shared rate-limit counters and cross-instance events when set. */
    url?: string;
  };
  readonly approvals: {
    /** APPROVALS_MAX_PENDING_PER_AGENT: most pending approvals one agent may have open; beyond them its held requests are denied. */
    maxPendingPerAgent: number;
  };
  readonly budgetLeases: {
    /** BUDGET_LEASE_PERCENT: share of a budget's limit one sidecar lease holds (at least the cost of the call asking). */
    percent: number;
    /** BUDGET_LEASE_TTL: how long a sidecar may spend a lease; then it is returned with what was spent. */
    ttlMs: number;
  };
  readonly audit: {
    /** AUDIT_REDACT: argument names whose values are stored as [redacted]. */
    redact: string[];
    /** AUDIT_BATCH_SIZE: most entries per batch (one COPY, or one INSERT on the embedded database). */
    batchSize: number;
    /** AUDIT_FLUSH_MS: longest an entry waits in memory before its batch is written. */
    flushMs: number;
    /** AUDIT_QUEUE_MAX: entries held in memory before requests wait (backpressure). */
    queueMax: number;
    /** AUDIT_LAG_MAX_MS: age of the oldest unwritten entry past which /health answers 503 `degraded`. */
    lagMaxMs: number;
  };
  readonly payment: {
    /** PAYMENT_SECRET_KEY: payment-provider secret key; unset, checkout and portal answer 503 billing_disabled. */
    secretKey?: string;
    /** PAYMENT_WEBHOOK_SECRET: signing secret of POST /billing/webhook. */
    webhookSecret?: string;
    /** PAYMENT_API_URL: provider API base URL (the SDK's default when unset; tests use a local fake). */
    apiUrl?: string;
    /** PAYMENT_PRICE_STARTER_MONTHLY, _STARTER_ANNUAL, _PROFESSIONAL_MONTHLY, _PROFESSIONAL_ANNUAL: provider price ids. */
    prices: { starterMonthly: string; starterAnnual: string; professionalMonthly: string; professionalAnnual: string };
  };
  /** ALERT_*: outgoing alerts (see AlertsConfig below). */
  readonly alerts: AlertsConfig;
  readonly oidc: {
    /** OIDC_ISSUER: identity provider of managed-identity bearer tokens (its discovery document and JWKS). */
    issuer?: string;
    /** OIDC_AUDIENCE: the `aud` such tokens must carry. */
    audience?: string;
    /** OIDC_JWKS_COOLDOWN: least time between two JWKS fetches for an unknown `kid`. */
    jwksCooldownMs: number;
  };
  /** METRICS_PORT, METRICS_TOKEN, LOG_REQUESTS, SLOW_REQUEST_MS, OTEL_*: metrics, request logs and traces (shared-settings.ts). */
  readonly telemetry: TelemetrySettings;
  /** MCP_SERVERS, MCP_PIN (docs/mcp.md). */
  readonly mcp: McpVariables;
  /** CREDENTIALS_KEY_FILE / CREDENTIALS_KEY and CREDENTIALS_PREVIOUS_KEY(_FILE): the upstream credential store's keys (docs/security.md). */
  readonly credentialKeys: CredentialKeys;
  /** DECISION_TOKENS: `true` adds X-Service-Decision-Token to every request forwarded after an allow (docs/security.md). */
  readonly decisionTokens: boolean;

  private constructor(values: Omit<AppConfig, 'embeddedDatabase'>) {
    Object.assign(this, values);
  }

  /** Reads and validates the environment; throws ConfigError naming every bad variable. */
  static fromEnv(env: NodeJS.ProcessEnv = process.env, version = packageVersion()): AppConfig {
    const read = new EnvReader(env);
    const port = read.int('PORT', 3000, 0, 65535);
    const dataDir = path.resolve(read.string('DATA_DIR', './data'));
    const adminToken = read.optionalString('ADMIN_TOKEN');
    if (adminToken !== undefined && adminToken.length < 16) {
      read.errors.push('ADMIN_TOKEN: must be at least 16 characters');
    }
    const values = {
      version,
      mode: read.oneOf('MODE', ['enforce', 'audit'] as const, 'enforce'),
      logLevel: read.oneOf('LOG_LEVEL', ['debug', 'info', 'warn', 'error'] as const, 'info'),
      http: {
        port,
        host: read.string('HOST', '0.0.0.0'),
        publicUrl: read.url('PUBLIC_URL', ['http:', 'https:']) ?? `http://localhost:${port}`,
        publicUrlSet: read.raw('PUBLIC_URL') !== undefined,
        maxJsonBytes: readMaxJsonBytes(read),
        rateLimitRpm: read.int('RATE_LIMIT_RPM', 600, 1, 1_000_000),
        trustedProxies: read.proxies('TRUSTED_PROXIES'),
      },
      // 25 s: inside the 30 s Kubernetes gives between SIGTERM and SIGKILL.
      shutdown: { timeoutMs: readShutdownTimeoutMs(read) },
      grpc: { port: read.int('PDP_GRPC_PORT', 50051, 0, 65535) },
      database: {
        url: read.url('DATABASE_URL', ['postgres:', 'postgresql:']),
        dataDir,
        poolMax: read.int('DATABASE_POOL_MAX', 10, 1, 200),
      },
      auth: {
        adminToken,
        defaultPlan: read.oneOf('DEFAULT_PLAN', PLAN_IDS, 'enterprise'),
        agentTokenTtlMs: read.durationMs('AGENT_TOKEN_TTL', '24h'),
        signingKeyFile: path.resolve(read.string('SIGNING_KEY_FILE', path.join(dataDir, 'signing-key.pem'))),
      },
      proxy: {
        ...readProxyVariables(read),
      },
      policies: {
        file: path.resolve(read.string('POLICIES_FILE', 'config/policies.yaml')),
        git: readPoliciesGit(read),
        ...(read.optionalString('POLICIES_GIT_LOCAL_ROOT') === undefined ? {} : { gitLocalRoot: path.resolve(read.string('POLICIES_GIT_LOCAL_ROOT', '/')) }),
        canaryCheckMs: read.durationMs('CANARY_CHECK_INTERVAL', '10s', 1000),
      },
      redis: { url: read.url('REDIS_URL', ['redis:', 'rediss:']) },
      approvals: {
        maxPendingPerAgent: read.int('APPROVALS_MAX_PENDING_PER_AGENT', 20, 1, 10_000),
      },
      budgetLeases: { percent: read.int('BUDGET_LEASE_PERCENT', 10, 1, 100), ttlMs: read.durationMs('BUDGET_LEASE_TTL', '1m') },
      audit: {
        redact: readAuditRedact(read),
        batchSize: read.int('AUDIT_BATCH_SIZE', 5000, 1, 10000),
        flushMs: read.int('AUDIT_FLUSH_MS', 250, 1, 60000),
        queueMax: read.int('AUDIT_QUEUE_MAX', 20000, 1, 10_000_000),
        lagMaxMs: read.int('AUDIT_LAG_MAX_MS', 10_000, 1, 3_600_000),
      },
      payment: {
        secretKey: read.optionalString('PAYMENT_SECRET_KEY'),
        webhookSecret: read.optionalString('PAYMENT_WEBHOOK_SECRET'),
        apiUrl: read.origin('PAYMENT_API_URL', ['http:', 'https:']),
        prices: {
          starterMonthly: read.string('PAYMENT_PRICE_STARTER_MONTHLY', 'price_starter_monthly'),
          starterAnnual: read.string('PAYMENT_PRICE_STARTER_ANNUAL', 'price_starter_annual'),
          professionalMonthly: read.string('PAYMENT_PRICE_PROFESSIONAL_MONTHLY', 'price_professional_monthly'),
          professionalAnnual: read.string('PAYMENT_PRICE_PROFESSIONAL_ANNUAL', 'price_professional_annual'),
        },
      },
      alerts: readAlertsConfig(read),
      oidc: {
        issuer: read.url('OIDC_ISSUER', ['http:', 'https:']),
        audience: read.optionalString('OIDC_AUDIENCE'),
        jwksCooldownMs: read.durationMs('OIDC_JWKS_COOLDOWN', '30s'),
      },
      telemetry: readTelemetrySettings(read, port, 'agentgov-gateway'),
      mcp: readMcpVariables(read),
      credentialKeys: readCredentialKeys(read),
      decisionTokens: read.bool('DECISION_TOKENS', true),
    };
    if (read.errors.length > 0) throw new ConfigError(read.errors);
    return new AppConfig(values);
  }

  /** True when the embedded PGlite database is used. */
  get embeddedDatabase(): boolean {
    return this.database.url === undefined;
  }
}

export function packageVersion(): string {
  // package.json sits three levels above src/core/config (ts-jest) and four above dist/src/core/config (built).
  for (const candidate of ['../../../package.json', '../../../../package.json']) {
    const file = path.join(__dirname, candidate);
    if (fs.existsSync(file)) return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
  }
  return '0.0.0';
}

// ---- Alerting (ALERT_*; docs/alerts.md "Configuration") ----

/** The triggers ALERT_ON accepts; `all` stands for the three others. */
export const ALERT_TRIGGERS = ['deny', 'error', 'rate_limit', 'all'] as const;
export type AlertTriggerName = (typeof ALERT_TRIGGERS)[number];

export interface AlertsConfig {
  /** ALERT_ON: triggers, as configured (`all` not expanded). */
  on: AlertTriggerName[];
  /** ALERT_WEBHOOK_URL: the generic webhook. */
  webhookUrl?: string;
  /** ALERT_WEBHOOK_SECRET: HMAC-SHA256 key of the webhook's signatures; unsigned without it. */
  webhookSecret?: string;
  /** ALERT_CHAT_WEBHOOK: a Slack-compatible incoming webhook. */
  chatWebhook?: string;
  email: {
    /** ALERT_EMAIL_ENABLED: `true` sends alerts by email. */
    enabled: boolean;
    /** ALERT_EMAIL_FROM: sender address. */
    from?: string;
    /** ALERT_EMAIL_TO: recipients, comma-separated. */
    to: string[];
    /** ALERT_EMAIL_API_KEY: key of the email delivery API (Resend); preferred over SMTP. */
    apiKey?: string;
    /** ALERT_EMAIL_API_URL: base URL of that API (tests point it at a local fake). */
    apiUrl: string;
    /** ALERT_SMTP_HOST, _PORT, _USER, _PASS: SMTP delivery when no API key is set. */
    smtpHost?: string;
    smtpPort: number;
    smtpUser?: string;
    smtpPass?: string;
  };
  /** ALERT_RATE_LIMIT: most alerts sent per minute, all providers together; the rest are dropped. */
  ratePerMinute: number;
  /** ALERT_INSTANCE_NAME: names this gateway in alerts. */
  instanceName: string;
  /** ALERT_ENVIRONMENT: names its environment in alerts (and scopes the shared rate counter). */
  environment: string;
}

// One address: a single `@`, no spaces, brackets or list separators (`a@b;c@d` is not one address).
const EMAIL_ADDRESS = /^[^\s@<>,;"]+@[^\s@<>,;"]+$/;
// `Alerts <alerts@example.com>`: an address with a display name.
const NAMED_ADDRESS = /^[^<>\r\n]*<([^<>]*)>$/;
const MAILBOX_EXPECTED = 'expected an email address (alerts@example.com or Alerts <alerts@example.com>)';
/** Recipients one email of the Resend API may have (its `to`). */
const MAX_API_EMAIL_RECIPIENTS = 50;

/**
 * An address SMTP and the email API accept. Checked at start: a malformed one failed every
 * alert email (SMTP: "No recipients defined") while the gateway started as if all were well.
 */
function isMailbox(value: string): boolean {
  const named = NAMED_ADDRESS.exec(value);
  return EMAIL_ADDRESS.test(named === null ? value : named[1]);
}

function readAlertsConfig(read: EnvReader): AlertsConfig {
  const alerts: AlertsConfig = {
    on: read.list('ALERT_ON', [], ALERT_TRIGGERS) as AlertTriggerName[],
    webhookUrl: read.endpointUrl('ALERT_WEBHOOK_URL', ['http:', 'https:']),
    webhookSecret: read.optionalString('ALERT_WEBHOOK_SECRET'),
    chatWebhook: read.endpointUrl('ALERT_CHAT_WEBHOOK', ['http:', 'https:']),
    email: {
      enabled: read.bool('ALERT_EMAIL_ENABLED', false),
      from: read.optionalString('ALERT_EMAIL_FROM'),
      to: read.list('ALERT_EMAIL_TO', []),
      apiKey: read.optionalString('ALERT_EMAIL_API_KEY'),
      apiUrl: read.endpointUrl('ALERT_EMAIL_API_URL', ['http:', 'https:']) ?? 'https://api.resend.com',
      smtpHost: read.host('ALERT_SMTP_HOST', 'no scheme, port or credentials (those are ALERT_SMTP_PORT, ALERT_SMTP_USER and ALERT_SMTP_PASS)'),
      smtpPort: read.int('ALERT_SMTP_PORT', 587, 1, 65535),
      smtpUser: read.optionalString('ALERT_SMTP_USER'),
      smtpPass: read.optionalString('ALERT_SMTP_PASS'),
    },
    ratePerMinute: read.int('ALERT_RATE_LIMIT', 10, 1, 1_000_000_000),
    instanceName: read.string('ALERT_INSTANCE_NAME', 'agent-governance'),
    environment: read.string('ALERT_ENVIRONMENT', 'production'),
  };
  const email = alerts.email;
  if (email.enabled) {
    if (email.from === undefined) read.errors.push('ALERT_EMAIL_FROM: required when ALERT_EMAIL_ENABLED=true');
    else if (!isMailbox(email.from)) read.errors.push(`ALERT_EMAIL_FROM=${JSON.stringify(email.from)}: ${MAILBOX_EXPECTED}`);
    if (email.to.length === 0) read.errors.push('ALERT_EMAIL_TO: required when ALERT_EMAIL_ENABLED=true');
    const badTo = email.to.filter((address) => !isMailbox(address));
    if (badTo.length > 0) read.errors.push(`ALERT_EMAIL_TO: ${badTo.map((address) => JSON.stringify(address)).join(', ')}: ${MAILBOX_EXPECTED}`);
    if (email.apiKey !== undefined && email.to.length > MAX_API_EMAIL_RECIPIENTS) {
      read.errors.push(`ALERT_EMAIL_TO: ${email.to.length} recipients; the email API (Resend) takes at most ${MAX_API_EMAIL_RECIPIENTS} per email: use a mailing list address`);
    }
    // The raw value: a malformed ALERT_SMTP_HOST has its own message.
    if (email.apiKey === undefined && read.raw('ALERT_SMTP_HOST') === undefined) {
      read.errors.push('ALERT_EMAIL_ENABLED=true needs ALERT_EMAIL_API_KEY (delivery API) or ALERT_SMTP_HOST (SMTP)');
    }
  }
  if (email.apiKey !== undefined && /[\r\n]/.test(email.apiKey)) read.errors.push('ALERT_EMAIL_API_KEY: must not contain line breaks');
  if (email.smtpUser !== undefined && email.smtpPass === undefined) read.errors.push('ALERT_SMTP_PASS: required with ALERT_SMTP_USER');
  return alerts;
}

/** Where an organization's policies come from when they are kept in git. */
export interface PoliciesGitSettings {
  /** POLICIES_GIT_URL: any URL git fetches from (`git://`, `https://`, `file://`), or a local path. */
  url: string;
  /** POLICIES_GIT_BRANCH (default main). */
  branch: string;
  /** POLICIES_GIT_PATH: the folder of the repository holding the policy and test files (default: the whole repository). */
  path: string;
  /** POLICIES_GIT_POLL_INTERVAL (default 60s): how often the branch is fetched, and a failed fetch retried. */
  pollMs: number;
  /** POLICIES_GIT_ALLOWED_SIGNERS: an SSH allowed-signers file; when set, a commit not signed by one of them is refused. */
  allowedSigners?: string;
  /** POLICIES_GIT_ORG (default the bootstrap organization, org_default): the organization whose policies follow the repository. */
  orgId: string;
}

function readPoliciesGit(read: EnvReader): PoliciesGitSettings | undefined {
  const url = read.optionalString('POLICIES_GIT_URL');
  if (url === undefined) return undefined;
  const signers = read.optionalString('POLICIES_GIT_ALLOWED_SIGNERS');
  const folder = read.string('POLICIES_GIT_PATH', '.').replace(/^\/+|\/+$/g, '') || '.';
  return {
    url: /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : path.resolve(url),
    branch: read.string('POLICIES_GIT_BRANCH', 'main'),
    orgId: read.string('POLICIES_GIT_ORG', 'org_default'),
    path: folder,
    pollMs: read.durationMs('POLICIES_GIT_POLL_INTERVAL', '60s', 1000),
    ...(signers === undefined ? {} : { allowedSigners: path.resolve(signers) }),
  };
}
