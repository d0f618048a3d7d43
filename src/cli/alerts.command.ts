import { Command, SubCommand } from 'nest-commander';
import { AlertDelivery, configuredProviders, DeliveryResult } from '../gateway/alerts/alert-delivery';
import { safeUrl } from '../gateway/alerts/alert-http';
import { testAlert } from '../gateway/alerts/alert';
import { activeTriggers } from '../gateway/alerts/alert-triggers';
import { AlertsConfig, AppConfig } from '../core/config/app-config';
import { CliCommand, CommandGroup } from './cli-command';
import { CliError, fail, printFields } from './cli-output';

/**
 * The alert settings of this environment. Read here rather than injected: `ags alerts` runs
 * without the database (main.ts's offline commands), beside a running embedded gateway.
 */
function alertSettings(): { alerts: AlertsConfig; redisUrl?: string } {
  const config = AppConfig.fromEnv();
  return { alerts: config.alerts, redisUrl: config.redis.url };
}

function hidden(value: string | undefined): string {
  return value === undefined ? '(not set)' : '(set, hidden)';
}

@SubCommand({ name: 'config', description: 'Show the alert configuration (secrets masked)' })
export class AlertsConfigCommand extends CliCommand {
  async run(): Promise<void> {
    try {
      const { alerts, redisUrl } = alertSettings();
      printFields({
        ALERT_ON: alerts.on.length === 0 ? '(none)' : alerts.on.join(','),
        ALERT_WEBHOOK_URL: alerts.webhookUrl ? safeUrl(alerts.webhookUrl) : '(not set)',
        ALERT_WEBHOOK_SECRET: hidden(alerts.webhookSecret),
        ALERT_CHAT_WEBHOOK: alerts.chatWebhook ? safeUrl(alerts.chatWebhook) : '(not set)',
        ALERT_EMAIL_ENABLED: String(alerts.email.enabled),
        ALERT_EMAIL_FROM: alerts.email.from ?? '(not set)',
        ALERT_EMAIL_TO: alerts.email.to.length === 0 ? '(not set)' : alerts.email.to.join(','),
        ALERT_EMAIL_API_KEY: hidden(alerts.email.apiKey),
        ALERT_EMAIL_API_URL: safeUrl(alerts.email.apiUrl),
        ALERT_SMTP_HOST: alerts.email.smtpHost ?? '(not set)',
        ALERT_SMTP_PORT: String(alerts.email.smtpPort),
        ALERT_SMTP_USER: alerts.email.smtpUser ?? '(not set)',
        ALERT_SMTP_PASS: hidden(alerts.email.smtpPass),
        ALERT_RATE_LIMIT: `${alerts.ratePerMinute} per minute (${redisUrl ? 'shared through Redis' : 'per process'})`,
        ALERT_INSTANCE_NAME: alerts.instanceName,
        ALERT_ENVIRONMENT: alerts.environment,
      });
    } catch (error) {
      fail(error);
    }
  }
}

const TRIGGERS: Array<[name: 'deny' | 'error' | 'rate_limit', meaning: string, severity: string]> = [
  ['deny', 'a policy denied a request', 'critical for privileged agents or admin paths, else warning'],
  ['error', 'the request failed: the gateway or the upstream answered 5xx', 'critical'],
  ['rate_limit', 'an agent exceeded a rate limit (429)', 'warning'],
];

@SubCommand({ name: 'triggers', description: 'List the alert triggers, which are on (ALERT_ON) and their severity' })
export class AlertsTriggersCommand extends CliCommand {
  async run(): Promise<void> {
    try {
      const active = activeTriggers(alertSettings().alerts.on);
      for (const [name, meaning, severity] of TRIGGERS) {
        process.stdout.write(`${name.padEnd(11)} ${active.has(name) ? 'on ' : 'off'}  ${meaning} (${severity})\n`);
      }
      process.stdout.write(`${'alert_rule'.padEnd(11)} on   an \`alert\` rule of a policy fired (warning; always on)\n`);
      process.stdout.write(`${'test'.padEnd(11)} on   \`ags alerts test\` (info)\n`);
    } catch (error) {
      fail(error);
    }
  }
}

@SubCommand({ name: 'providers', description: 'List the alert providers and which are configured' })
export class AlertsProvidersCommand extends CliCommand {
  async run(): Promise<void> {
    try {
      const { alerts } = alertSettings();
      const providers = configuredProviders(alerts);
      const configured = new Map(providers.map((provider) => [provider.name, provider.target]));
      const rows: Array<[string, string]> = [
        ['webhook', 'ALERT_WEBHOOK_URL, ALERT_WEBHOOK_SECRET'],
        ['chat', 'ALERT_CHAT_WEBHOOK'],
        ['email', 'ALERT_EMAIL_ENABLED, ALERT_EMAIL_FROM, ALERT_EMAIL_TO, then ALERT_EMAIL_API_KEY or ALERT_SMTP_*'],
      ];
      for (const [name, variables] of rows) {
        const target = configured.get(name as 'webhook');
        process.stdout.write(`${name.padEnd(8)} ${target === undefined ? `not configured (${variables})` : `configured: ${target}`}\n`);
      }
      await Promise.all(providers.map((provider) => provider.close()));
    } catch (error) {
      fail(error);
    }
  }
}

@SubCommand({ name: 'test', description: 'Send a clearly marked test alert (info) to every configured provider; exit 1 if one fails' })
export class AlertsTestCommand extends CliCommand {
  async run(): Promise<void> {
    let delivery: AlertDelivery | undefined;
    try {
      const { alerts, redisUrl } = alertSettings();
      delivery = AlertDelivery.fromConfig(alerts, redisUrl, (level, message, fields) => process.stderr.write(`${level}: ${message} ${JSON.stringify(fields)}\n`));
      if (delivery.providerList.length === 0) throw new CliError('no alert provider is configured (see `ags alerts providers`)');
      const alert = testAlert();
      process.stdout.write(`test alert ${alert.id}\n`);
      const results = await delivery.sendNow(alert);
      for (const result of results) process.stdout.write(`${line(result)}\n`);
      const failed = results.filter((result) => !result.ok);
      if (failed.length > 0) throw new CliError(`${failed.length} of ${results.length} provider(s) failed`);
    } catch (error) {
      fail(error);
    } finally {
      await delivery?.close();
    }
  }
}

function line(result: DeliveryResult): string {
  const attempts = `${result.attempts} attempt${result.attempts === 1 ? '' : 's'}`;
  return result.ok ? `ok      ${result.provider}: ${result.target} (${attempts})` : `FAILED  ${result.provider}: ${result.target} (${attempts}): ${result.error}`;
}

@Command({
  name: 'alerts',
  description: 'Alert configuration, triggers and providers; send a test alert (no database needed)',
  subCommands: [AlertsConfigCommand, AlertsTestCommand, AlertsTriggersCommand, AlertsProvidersCommand],
})
export class AlertsCommand extends CommandGroup {}

/** Every provider of `ags alerts`, for the CLI modules. */
export const ALERTS_COMMANDS = [AlertsCommand, AlertsConfigCommand, AlertsTestCommand, AlertsTriggersCommand, AlertsProvidersCommand];
