import nodemailer, { Transporter } from 'nodemailer';
import { AppConfig } from '../../core/config/app-config';
import { smtpTransportOptions } from '../common/smtp-transport-options';

export interface BillingMail {
  to: string;
  subject: string;
  text: string;
}

/**
 * Sends billing emails (the checkout confirmation). The injection token; the alerting email
 * transport can take its place later. `enabled` is false when no transport is configured.
 */
export abstract class BillingMailer {
  abstract readonly enabled: boolean;
  abstract send(mail: BillingMail): Promise<void>;
}

/** SMTP through nodemailer, on the ALERT_SMTP_* settings, from ALERT_EMAIL_FROM. */
export class SmtpBillingMailer extends BillingMailer {
  readonly enabled = true;
  private readonly transport: Transporter;

  constructor(
    host: string,
    private readonly from: string,
    options: { port: number; user?: string; pass?: string },
  ) {
    super();
    this.transport = nodemailer.createTransport(smtpTransportOptions({ host, ...options }, { connectionMs: 10_000, socketMs: 20_000 }));
  }

  async send(mail: BillingMail): Promise<void> {
    await this.transport.sendMail({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text });
  }
}

/** No email transport configured: nothing is sent. */
export class NoBillingMailer extends BillingMailer {
  readonly enabled = false;

  async send(): Promise<void> {
    // Callers check `enabled` first; with no transport there is nowhere to send.
  }
}

/** The mailer the configuration asks for: SMTP when ALERT_SMTP_HOST is set. */
export function createBillingMailer(config: AppConfig): BillingMailer {
  const email = config.alerts.email;
  if (email.smtpHost === undefined) return new NoBillingMailer();
  const from = email.from ?? `billing@${new URL(config.http.publicUrl).hostname}`;
  return new SmtpBillingMailer(email.smtpHost, from, { port: email.smtpPort, user: email.smtpUser, pass: email.smtpPass });
}
