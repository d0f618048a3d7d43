import path from 'node:path';
import { AppConfig, ConfigError } from './app-config';
import { redactUrl } from './env-reader';

/** AppConfig.fromEnv: the defaults of docs/configuration.md, and every bad value named. */

function configError(env: Record<string, string>): ConfigError {
  try {
    AppConfig.fromEnv(env, '9.9.9');
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`);
}

describe('AppConfig.fromEnv defaults', () => {
  const config = AppConfig.fromEnv({}, '9.9.9');

  it.each<[string, unknown, unknown]>([
    ['PORT', config.http.port, 3000],
    ['PDP_GRPC_PORT', config.grpc.port, 50051],
    ['HOST', config.http.host, '0.0.0.0'],
    ['MODE', config.mode, 'enforce'],
    ['LOG_LEVEL', config.logLevel, 'info'],
    ['DEFAULT_PLAN', config.auth.defaultPlan, 'enterprise'],
    ['AGENT_TOKEN_TTL (24h)', config.auth.agentTokenTtlMs, 86_400_000],
    ['RATE_LIMIT_RPM', config.http.rateLimitRpm, 600],
    ['MAX_JSON_BYTES (1 MiB)', config.http.maxJsonBytes, 1_048_576],
    ['PROXY_MAX_BODY_BYTES (50 MiB)', config.proxy.maxBodyBytes, 50 * 1024 * 1024],
    ['PUBLIC_URL', config.http.publicUrl, 'http://localhost:3000'],
    ['DATA_DIR', config.database.dataDir, path.resolve('./data')],
    ['SIGNING_KEY_FILE', config.auth.signingKeyFile, path.resolve('./data/signing-key.pem')],
    ['POLICIES_FILE', config.policies.file, path.resolve('config/policies.yaml')],
    ['ADMIN_TOKEN', config.auth.adminToken, undefined],
    ['DATABASE_URL', config.database.url, undefined],
    ['UPSTREAM_URL', config.proxy.upstreamUrl, undefined],
    ['REDIS_URL', config.redis.url, undefined],
    ['ALERT_ON', config.alerts.on, []],
    ['ALERT_RATE_LIMIT', config.alerts.ratePerMinute, 10],
    ['SHUTDOWN_TIMEOUT_MS (25 s)', config.shutdown.timeoutMs, 25_000],
    ['OIDC_ISSUER', config.oidc.issuer, undefined],
    ['OIDC_JWKS_COOLDOWN (30s)', config.oidc.jwksCooldownMs, 30_000],
  ])('%s', (_name, actual, expected) => {
    expect(actual).toEqual(expected);
  });

  it('redacts secret-looking argument names by default', () => {
    expect(config.audit.redact).toEqual(expect.arrayContaining(['password', 'secret', 'token', 'authorization', 'api_key']));
  });

  it('uses the embedded database when DATABASE_URL is unset', () => {
    expect(config.embeddedDatabase).toBe(true);
  });

  it('reports the version it is given', () => {
    expect(config.version).toBe('9.9.9');
  });
});

describe('AppConfig.fromEnv values', () => {
  it('reads every variable it is given', () => {
    const config = AppConfig.fromEnv(
      {
        PORT: '8080',
        PDP_GRPC_PORT: '0',
        HOST: '127.0.0.1',
        MODE: 'audit',
        DEFAULT_PLAN: 'free',
        AGENT_TOKEN_TTL: '90m',
        DATABASE_URL: 'postgresql://user:pw@db:5432/gov',
        UPSTREAM_URL: 'https://upstream.example/',
        REDIS_URL: 'redis://127.0.0.1:6379',
        ADMIN_TOKEN: 'a-long-enough-admin-token',
        LOG_LEVEL: 'debug',
        ALERT_ON: 'deny, rate_limit',
        MAX_JSON_BYTES: '2048',
        AUDIT_REDACT: 'Card_Number,ssn',
        DATA_DIR: '/var/lib/gov',
        SHUTDOWN_TIMEOUT_MS: '5000',
      },
      '1.0.0',
    );
    expect(config).toMatchObject({
      mode: 'audit',
      logLevel: 'debug',
      http: { port: 8080, host: '127.0.0.1', publicUrl: 'http://localhost:8080', maxJsonBytes: 2048 },
      grpc: { port: 0 },
      database: { url: 'postgresql://user:pw@db:5432/gov', dataDir: '/var/lib/gov' },
      auth: { adminToken: 'a-long-enough-admin-token', defaultPlan: 'free', agentTokenTtlMs: 5_400_000, signingKeyFile: '/var/lib/gov/signing-key.pem' },
      proxy: { upstreamUrl: 'https://upstream.example' },
      redis: { url: 'redis://127.0.0.1:6379' },
      alerts: { on: ['deny', 'rate_limit'] },
      audit: { redact: ['card_number', 'ssn'] },
      shutdown: { timeoutMs: 5000 },
    });
    expect(config.embeddedDatabase).toBe(false);
  });

  it.each([
    ['30s', 30_000],
    ['90m', 5_400_000],
    ['24h', 86_400_000],
    ['7d', 604_800_000],
  ])('reads AGENT_TOKEN_TTL=%s', (ttl, ms) => {
    expect(AppConfig.fromEnv({ AGENT_TOKEN_TTL: ttl }).auth.agentTokenTtlMs).toBe(ms);
  });

  it('treats empty values as unset', () => {
    const config = AppConfig.fromEnv({ PORT: '', MODE: ' ', DATABASE_URL: '' });
    expect(config.http.port).toBe(3000);
    expect(config.mode).toBe('enforce');
    expect(config.database.url).toBeUndefined();
  });
});

describe('alert endpoint URLs', () => {
  it('are kept as given: trailing slash and query included', () => {
    const config = AppConfig.fromEnv({ ALERT_WEBHOOK_URL: 'https://hooks.example/hooks/', ALERT_CHAT_WEBHOOK: 'https://chat.example/services/T/B/X/?ref=a/' }, '9.9.9');
    expect(config.alerts.webhookUrl).toBe('https://hooks.example/hooks/');
    expect(config.alerts.chatWebhook).toBe('https://chat.example/services/T/B/X/?ref=a/');
  });
});

describe('ALERT_SMTP_HOST', () => {
  it('takes a host name or an IP address; an IPv6 address in URL brackets loses them (nodemailer looks `[::1]` up as a name)', () => {
    const host = (value: string) => AppConfig.fromEnv({ ALERT_SMTP_HOST: value }, '9.9.9').alerts.email.smtpHost;
    expect(host('smtp.example.com')).toBe('smtp.example.com');
    expect(host('192.0.2.25')).toBe('192.0.2.25');
    expect(host('::1')).toBe('::1');
    expect(host('[::1]')).toBe('::1');
    expect(host('[2001:db8::25]')).toBe('2001:db8::25');
  });

  it('refuses a URL, naming the variable without its credentials', () => {
    const error = configError({ ALERT_SMTP_HOST: 'smtps://mailer:hunter2@smtp.example.com:465' });
    expect(error.problems).toEqual([expect.stringMatching(/^ALERT_SMTP_HOST=.*expected a host name or IP address/)]);
    expect(error.problems[0]).not.toContain('hunter2');
  });
});

describe('PAYMENT_API_URL', () => {
  it('takes scheme, host and port', () => {
    expect(AppConfig.fromEnv({ PAYMENT_API_URL: 'http://127.0.0.1:12111/' }, '9.9.9').payment.apiUrl).toBe('http://127.0.0.1:12111');
  });

  it.each(['https://proxy.internal/stripe', 'https://proxy.internal/?x=1', 'https://user:hunter2@proxy.internal'])('refuses %s: the SDK would drop what follows the host', (value) => {
    const error = configError({ PAYMENT_API_URL: value });
    expect(error.problems).toEqual([expect.stringMatching(/^PAYMENT_API_URL=.*expected scheme:\/\/host\[:port\] only/)]);
    expect(error.problems[0]).not.toContain('hunter2');
  });
});

describe('alert email addresses', () => {
  const email = { ALERT_EMAIL_ENABLED: 'true', ALERT_SMTP_HOST: 'smtp.example', ALERT_EMAIL_FROM: 'alerts@example.com', ALERT_EMAIL_TO: 'ops@example.com' };

  it('accepts plain and named addresses', () => {
    const config = AppConfig.fromEnv({ ...email, ALERT_EMAIL_FROM: 'Agent Alerts <alerts@example.com>', ALERT_EMAIL_TO: 'ops@example.com, On Call <oncall@example.com>' }, '9.9.9');
    expect(config.alerts.email.to).toEqual(['ops@example.com', 'On Call <oncall@example.com>']);
  });

  it.each<[string, string]>([
    ['ALERT_EMAIL_TO', 'not-an-address'],
    ['ALERT_EMAIL_TO', 'ops@example.com, ops at example.com'],
    ['ALERT_EMAIL_TO', 'ops@example.com;dev@example.com'],
    ['ALERT_EMAIL_FROM', 'nobody'],
    ['ALERT_EMAIL_FROM', 'alerts@@example.com'],
  ])('refuses %s=%s at start, naming the variable (every alert email would fail)', (name, value) => {
    const error = configError({ ...email, [name]: value });
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain(name);
    expect(error.problems[0]).toMatch(/email address/);
  });

  it('refuses more than 50 ALERT_EMAIL_TO recipients with the email API, which takes at most 50 (every alert email would fail), not with SMTP', () => {
    const many = Array.from({ length: 51 }, (_, index) => `ops${index}@example.com`).join(',');
    const { ALERT_SMTP_HOST: _smtp, ...withoutSmtp } = email;
    const error = configError({ ...withoutSmtp, ALERT_EMAIL_API_KEY: 're_key', ALERT_EMAIL_TO: many });
    expect(error.problems).toEqual([expect.stringMatching(/^ALERT_EMAIL_TO: 51 recipients; the email API .* at most 50/)]);
    expect(AppConfig.fromEnv({ ...email, ALERT_EMAIL_TO: many }, '9.9.9').alerts.email.to).toHaveLength(51);
  });
});

describe('AppConfig.fromEnv rejects bad values, naming the variable and what it accepts', () => {
  it.each<[string, string, RegExp]>([
    ['PORT', 'abc', /whole number from 0 to 65535/],
    ['PORT', '70000', /whole number from 0 to 65535/],
    ['PORT', '-1', /whole number from 0 to 65535/],
    ['PORT', '80.5', /whole number/],
    ['PDP_GRPC_PORT', 'grpc', /whole number/],
    ['MODE', 'block', /enforce, audit/],
    ['MODE', 'ENFORCE', /enforce, audit/],
    ['DEFAULT_PLAN', 'gold', /free, starter, professional, enterprise/],
    ['AGENT_TOKEN_TTL', 'forever', /duration like/],
    ['AGENT_TOKEN_TTL', '24', /duration like/],
    ['AGENT_TOKEN_TTL', '1w', /duration like/],
    ['AGENT_TOKEN_TTL', '0s', /duration/],
    ['DATABASE_URL', 'mysql://x', /postgres:/],
    ['DATABASE_URL', 'not a url', /postgres:/],
    ['UPSTREAM_URL', 'ftp://x', /http:.*https:/],
    ['REDIS_URL', 'http://127.0.0.1:6379', /redis:/],
    ['PUBLIC_URL', 'gateway.example', /http:/],
    ['LOG_LEVEL', 'trace', /debug, info, warn, error/],
    ['ALERT_ON', 'deny,boom', /boom.*deny, error, rate_limit, all/],
    ['ADMIN_TOKEN', 'short', /at least 16 characters/],
    ['MAX_JSON_BYTES', 'lots', /whole number/],
    ['RATE_LIMIT_RPM', '0', /whole number from 1/],
    ['ALERT_EMAIL_ENABLED', 'maybe', /true or false/],
    ['SHUTDOWN_TIMEOUT_MS', '0', /whole number from 1 to 3600000/],
    ['SHUTDOWN_TIMEOUT_MS', '25s', /whole number/],
    ['OIDC_ISSUER', 'login.example.com', /http:.*https:/],
    ['OIDC_JWKS_COOLDOWN', '500ms', /duration like/],
  ])('%s=%s', (name, value, accepts) => {
    const error = configError({ [name]: value });
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain(name);
    expect(error.problems[0]).toMatch(accepts);
    expect(error.message).toContain(error.problems[0]);
  });

  it('does not print the credentials of a bad URL', () => {
    const error = configError({ DATABASE_URL: 'mysql://admin:hunter2@db/x' });
    expect(error.message).toContain('DATABASE_URL');
    expect(error.message).not.toContain('hunter2');
  });

  it.each(['http://user:SEC/RETPW@host:99999/x', 'ftp://user:SEC@RETPW@host/x', 'http://user:SEC?RET#PW@host:99999/x'])('does not print any part of the password of a malformed URL: %s', (url) => {
    const error = configError({ ALERT_WEBHOOK_URL: url });
    expect(error.message).toContain('ALERT_WEBHOOK_URL');
    expect(error.message).toMatch(/\/\/\*\*\*@host/);
    expect(error.message).not.toMatch(/SEC|RET|PW/);
  });

  it.each(['ALERT_WEBHOOK_URL', 'ALERT_CHAT_WEBHOOK', 'ALERT_EMAIL_API_URL'])('refuses credentials in %s, naming it, without printing them', (name) => {
    const error = configError({ [name]: 'https://hookuser:hookpass@hooks.example/in/' });
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain(name);
    expect(error.problems[0]).toMatch(/credentials in the URL .* not supported/);
    expect(error.message).not.toMatch(/hookuser|hookpass/);
  });

  it.each([
    ['ALERT_CHAT_WEBHOOK', 'hooks.slack.com/services/T000/B000/CHAT-S3KR1T'],
    ['ALERT_WEBHOOK_URL', 'htps://hooks.example/in/PATH-S3KR1T'],
    ['ALERT_WEBHOOK_URL', 'htps://hooks.example?token=QUERY-S3KR1T'],
    ['ALERT_EMAIL_API_URL', 'https://apikey:PW-S3KR1T@api.example/tenant/PATH-S3KR1T'],
  ])('does not print the path or query of a refused %s (webhook secrets live there): %s', (name, url) => {
    const error = configError({ [name]: url });
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain(name);
    expect(error.message).not.toMatch(/S3KR1T/);
  });

  it.each([
    ['redis://:pw-S3KR1T@127.0.0.1:1', 'redis://***@127.0.0.1:1'],
    ['htps://hooks.example:8443/in/PATH-S3KR1T?x=1', 'htps://hooks.example:8443/***'],
    ['hooks.slack.com/services/T000/B000/S3KR1T', 'hooks.slack.com/***'],
    ['http://127.0.0.1:4000', 'http://127.0.0.1:4000'],
  ])('redactUrl keeps the scheme and host of %s and hides the rest', (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });

  it('does not print the value of a too-short ADMIN_TOKEN', () => {
    const error = configError({ ADMIN_TOKEN: 'sekrit-123' });
    expect(error.message).toContain('ADMIN_TOKEN');
    expect(error.message).not.toContain('sekrit-123');
  });

  it('reports several bad values at once', () => {
    const error = configError({ PORT: 'abc', MODE: 'block', DEFAULT_PLAN: 'gold', AGENT_TOKEN_TTL: 'forever', UPSTREAM_URL: 'ftp://x', LOG_LEVEL: 'trace' });
    expect(error.problems).toHaveLength(6);
    for (const name of ['PORT', 'MODE', 'DEFAULT_PLAN', 'AGENT_TOKEN_TTL', 'UPSTREAM_URL', 'LOG_LEVEL']) {
      expect(error.message).toContain(name);
    }
  });
});

describe('metrics, request logs and traces (shared with the sidecar)', () => {
  it('serve no metrics, log no requests, warn past 1 s and send no spans by default', () => {
    expect(AppConfig.fromEnv({}).telemetry).toEqual({ logRequests: false, slowRequestMs: 1000, tracesHeaders: {}, serviceName: 'agentgov-gateway', metricsPort: undefined, metricsToken: undefined, tracesUrl: undefined });
  });

  it('read METRICS_PORT, METRICS_TOKEN, LOG_REQUESTS, SLOW_REQUEST_MS and the OTLP endpoint, its headers and the service name', () => {
    const config = AppConfig.fromEnv({
      METRICS_PORT: '9464',
      METRICS_TOKEN: 'metrics-token-0123456789',
      LOG_REQUESTS: 'true',
      SLOW_REQUEST_MS: '0',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=a%20b,Tenant=t1',
      OTEL_SERVICE_NAME: 'edge-gw',
    });
    expect(config.telemetry).toEqual({
      metricsPort: 9464,
      metricsToken: 'metrics-token-0123456789',
      logRequests: true,
      slowRequestMs: 0,
      tracesUrl: 'http://collector:4318/v1/traces',
      tracesHeaders: { 'x-api-key': 'a b', tenant: 't1' },
      serviceName: 'edge-gw',
    });
  });

  it('refuse a metrics port that is the main one, a short token and malformed headers, without printing the headers', () => {
    expect(() => AppConfig.fromEnv({ PORT: '3000', METRICS_PORT: '3000', METRICS_TOKEN: 'short', OTEL_EXPORTER_OTLP_HEADERS: 'secret-value-only' })).toThrow(
      expect.objectContaining({
        problems: [
          'METRICS_PORT=3000: must differ from PORT (the metrics port is a listener of its own)',
          'METRICS_TOKEN: must be at least 16 characters',
          'OTEL_EXPORTER_OTLP_HEADERS: expected name=value pairs, comma-separated',
        ],
      }),
    );
  });
});

describe('the credential store keys', () => {
  it('take 32 bytes as base64 or hex, from the variable or its file, and default to none with decision tokens on', () => {
    const none = AppConfig.fromEnv({}, '9.9.9');
    expect(none.credentialKeys).toEqual({ current: undefined, previous: undefined });
    expect(none.decisionTokens).toBe(true);
    const base64 = Buffer.alloc(32, 7).toString('base64');
    const config = AppConfig.fromEnv({ CREDENTIALS_KEY: base64, CREDENTIALS_PREVIOUS_KEY: 'ab'.repeat(32), DECISION_TOKENS: 'false' }, '9.9.9');
    expect(config.credentialKeys.current?.bytes).toEqual(Buffer.alloc(32, 7));
    expect(config.credentialKeys.previous?.bytes).toEqual(Buffer.alloc(32, 0xab));
    expect(config.credentialKeys.current?.id).not.toBe(config.credentialKeys.previous?.id);
    expect(config.decisionTokens).toBe(false);
  });

  it('refuse a key of another length, or an unreadable file, naming the variable and never the value', () => {
    const error = configError({ CREDENTIALS_KEY: 'short-secret-value', CREDENTIALS_PREVIOUS_KEY_FILE: '/nonexistent/key' });
    expect(error.problems).toEqual([expect.stringMatching(/^CREDENTIALS_KEY: expected a 32-byte key/), expect.stringMatching(/^CREDENTIALS_PREVIOUS_KEY_FILE: cannot read \/nonexistent\/key/)]);
    expect(error.message).not.toContain('short-secret-value');
  });
});
