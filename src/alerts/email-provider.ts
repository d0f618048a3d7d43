import nodemailer, { Transporter } from 'nodemailer';
import type { AlertsConfig } from '../config/app-config';
import type { Alert, AlertOrigin } from './alert';
import { AlertHttpClient, safeUrl } from './alert-http';
import { AlertProvider, AlertSendError, AttemptListener } from './alert-provider';

/** Subject and plain-text body of an alert email. */
export function emailContent(alert: Alert, origin: AlertOrigin): { subject: string; text: string } {
  const { entry } = alert;
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
  ];
  return { subject: `[${alert.severity.toUpperCase()}] ${alert.title}`, text: `${lines.join('\n')}\n` };
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
  private readonly headers: readonly string[];

  constructor(
    private readonly config: AlertsConfig['email'],
    private readonly origin: AlertOrigin,
    private readonly http: AlertHttpClient,
  ) {
    this.url = emailsUrl(config.apiUrl);
    this.target = `email API ${safeUrl(this.url.href)} to ${config.to.join(', ')}`;
    this.headers = ['content-type: application/json', `authorization: Bearer ${config.apiKey}`, 'user-agent: Service/1.0'];
  }

  send(alert: Alert, attempt: AttemptListener): void {
    const { subject, text } = emailContent(alert, this.origin);
    const body = JSON.stringify({ from: this.config.from, to: this.config.to, subject, text, tags: [{ name: 'alert_id', value: alert.id }] });
    this.http.post(this.url, this.headers, body, attempt);
  }

  async close(): Promise<void> {
    this.http.close();
  }
}

/** Email through an SMTP server (ALERT_SMTP_*), with nodemailer; TLS on port 465, STARTTLS when the server offers it. */
export class SmtpEmailProvider implements AlertProvider {
  readonly name = 'email';
  readonly target: string;
  private readonly transport: Transporter;

  constructor(
    private readonly config: AlertsConfig['email'],
    private readonly origin: AlertOrigin,
  ) {
    this.transport = nodemailer.createTransport({
      host: config.smtpHost,
      port: config.smtpPort,
      secure: config.smtpPort === 465,
      auth: config.smtpUser === undefined ? undefined : { user: config.smtpUser, pass: config.smtpPass },
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 10_000,
    });
    this.target = `SMTP ${config.smtpHost}:${config.smtpPort} to ${config.to.join(', ')}`;
  }

  send(alert: Alert, attempt: AttemptListener): void {
    const { subject, text } = emailContent(alert, this.origin);
    this.transport.sendMail({ from: this.config.from, to: this.config.to, subject, text, headers: { 'X-Service-Alert-Id': alert.id } }).then(
      () => attempt.sent(),
      (error: unknown) => {
        const code = (error as { responseCode?: number }).responseCode;
        attempt.failed(new AlertSendError(`SMTP ${this.config.smtpHost}:${this.config.smtpPort} failed: ${error instanceof Error ? error.message : String(error)}`, code));
      },
    );
  }

  async close(): Promise<void> {
    this.transport.close();
  }
}
