import net from 'node:net';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';

/** Where and as whom to send mail over SMTP (the ALERT_SMTP_* variables). */
export interface SmtpServer {
  host: string;
  port: number;
  user?: string;
  pass?: string;
}

/**
 * nodemailer's options for an SMTP server: TLS from the first byte on port 465, else STARTTLS.
 * With credentials, STARTTLS is required unless the server is on loopback: nodemailer otherwise
 * upgrades only when the server offers it, so anyone between gateway and server could strip the
 * offer from the greeting and read ALERT_SMTP_PASS. A relay on the same host has no one between,
 * so its certificate is not checked either: a stock local MTA offers STARTTLS with a self-signed
 * certificate for the machine's name (Debian's and Ubuntu's Postfix), and checking it failed every
 * mail to `localhost`.
 */
export function smtpTransportOptions(server: SmtpServer, timeouts: { connectionMs: number; socketMs: number }): SMTPTransport.Options {
  const secure = server.port === 465;
  const loopback = isLoopback(server.host);
  return {
    host: server.host,
    port: server.port,
    secure,
    requireTLS: !secure && server.user !== undefined && !loopback,
    ...(loopback ? { tls: { rejectUnauthorized: false } } : {}),
    auth: server.user === undefined ? undefined : { user: server.user, pass: server.pass ?? '' },
    connectionTimeout: timeouts.connectionMs,
    greetingTimeout: timeouts.connectionMs,
    socketTimeout: timeouts.socketMs,
  };
}

function isLoopback(host: string): boolean {
  const address = host.replace(/^\[|\]$/g, '');
  if (address.toLowerCase() === 'localhost') return true;
  if (net.isIPv4(address)) return address.startsWith('127.');
  return net.isIPv6(address) && (address === '::1' || /^::ffff:127\./i.test(address));
}
