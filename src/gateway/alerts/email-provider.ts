import nodemailer, { Transporter } from 'nodemailer';
import type { AlertsConfig } from '../../core/config/app-config';
import { Alert, AlertOrigin, singleLine } from './alert';
import { AlertHttpClient, safeUrl } from './alert-http';
import { smtpTransportOptions } from '../common/smtp-transport-options';
import { AlertProvider, AlertSendError } from './alert-provider';

/** Subject and plain-text body of an alert email. */
export function emailContent(alert: Alert, origin: AlertOrigin): { subject: string; text: string } {
  const { entry } = alert;
  // Each line is one item: a value cannot add lines of its own (singleLine).
  const lines = [
    alert.message,
    '',
    `Severity:    ${alert.severity}`,
    `Trigger:     ${alert.trigger}`,
    `Policy:      ${entry.policyName}`,
    `Agent:       ${entry.agentName} (${entry.agentId}, ${entry.trustTier})`,
    `Decision:    ${entry.decision}`,
    `Action:      ${entry.action}`,
    `Request:     ${`${entry.method} ${entry.path}`.trim()}`,
    `Trace ID:    ${entry.traceId}`,
    `Reason:      ${entry.reason}`,
    `Instance:    ${origin.instance} (${origin.environment})`,
    `Alert:       ${alert.id} at ${alert.timestamp}`,
  ].map(singleLine);
  return { subject: singleLine(`[${alert.severity.toUpperCase()}] ${alert.title}`), text: `${lines.join('\n')}\n` };
}

/** `POST /emails` under the API's base URL, its query kept: `…/v1?tenant=abc` gives `…/v1/emails?tenant=abc`. */
export function emailsUrl(apiUrl: string): URL {
  const url = new URL(apiUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/emails`;
  return url;
}

/** Email through the Resend API (`POST /emails`), ALERT_EMAIL_API_KEY; its base URL is ALERT_EMAIL_API_URL. */
export class ApiEmailProvider implements AlertProvider {
  readonly name = 'email';
  readonly target: string;
  private readonly url: URL;
  private readonly headers: Readonly<Record<string, string>>;

  constructor(
    private readonly config: AlertsConfig['email'],
    private readonly origin: AlertOrigin,
    private readonly http: AlertHttpClient,
  ) {
    this.url = emailsUrl(config.apiUrl);
    this.target = `email API ${safeUrl(this.url.href)} to ${config.to.join(', ')}`;
    this.headers = { 'content-type': 'application/json', authorization: `Bearer ${config.apiKey}`, 'user-agent': 'Service/1.0' };
  }

  async send(alert: Alert): Promise<void> {
    const { subject, text } = emailContent(alert, this.origin);
    const body = JSON.stringify({ from: this.config.from, to: this.config.to, subject, text, tags: [{ name: 'alert_id', value: alert.id }] });
    // Resend sends an email once per key (for 24 hours): a retry after a lost answer is not a second email.
    await this.http.post(this.url, { ...this.headers, 'idempotency-key': `alert-email/${alert.id}` }, body);
  }

  async close(): Promise<void> {
    await this.http.close();
  }
}

/** What nodemailer's SMTP transport reports of a sent message: the recipients the server refused, if any. */
interface SmtpSentInfo {
  rejected?: Array<string | { address: string }>;
  rejectedErrors?: Array<{ response?: string; message: string }>;
}

/** Email through an SMTP server (ALERT_SMTP_*), with nodemailer; TLS as smtpTransportOptions sets it. */
export class SmtpEmailProvider implements AlertProvider {
  readonly name = 'email';
  readonly target: string;
  private readonly transport: Transporter;
  /**
   * The recipients the server refused while taking the others, per alert: the next attempt goes
   * to them alone, so the ones who got the alert do not get it again.
   */
  private readonly refused = new WeakMap<Alert, string[]>();

  constructor(
    private readonly config: AlertsConfig['email'],
    private readonly origin: AlertOrigin,
  ) {
    this.transport = nodemailer.createTransport(
      smtpTransportOptions({ host: config.smtpHost ?? '', port: config.smtpPort, user: config.smtpUser, pass: config.smtpPass }, { connectionMs: 10_000, socketMs: 10_000 }),
    );
    this.target = `SMTP ${config.smtpHost}:${config.smtpPort} to ${config.to.join(', ')}`;
  }

  async send(alert: Alert): Promise<void> {
    const { subject, text } = emailContent(alert, this.origin);
    // A retry after some recipients were refused goes to those alone (the message still shows them all).
    const only = this.refused.get(alert);
    const envelope = only === undefined ? undefined : { from: this.config.from, to: only.join(', ') };
    const to = only === undefined ? '' : ` to ${only.join(', ')}`;
    let info: SmtpSentInfo;
    try {
      info = (await this.transport.sendMail({ from: this.config.from, to: this.config.to, envelope, subject, text, headers: { 'X-Service-Alert-Id': alert.id } })) as SmtpSentInfo;
    } catch (error) {
      const code = (error as { responseCode?: number }).responseCode;
      throw new AlertSendError(`SMTP ${this.config.smtpHost}:${this.config.smtpPort}${to} failed: ${error instanceof Error ? error.message : String(error)}`, code);
    }
    const refused = (info.rejected ?? []).map((recipient) => (typeof recipient === 'string' ? recipient : recipient.address));
    if (refused.length === 0) return;
    // nodemailer resolves when the server takes one recipient; those it refused must not go unnoticed.
    this.refused.set(alert, refused);
    const why = (info.rejectedErrors ?? []).map((error) => error.response ?? error.message).join('; ');
    throw new AlertSendError(`SMTP ${this.config.smtpHost}:${this.config.smtpPort} refused ${refused.join(', ')}${why === '' ? '' : `: ${why}`}`);
  }

  async close(): Promise<void> {
    this.transport.close();
  }
}
