import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { smtpTransportOptions } from './smtp-transport-options';

/** A real SMTP server that offers no STARTTLS, as one whose greeting was tampered with looks. */
async function startPlainServer(): Promise<{ port: number; passwordsSeen: string[]; close(): Promise<void> }> {
  const passwordsSeen: string[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authOptional: true,
    logger: false,
    onAuth(auth, _session, callback) {
      passwordsSeen.push(auth.password ?? '');
      callback(null, { user: auth.username });
    },
    onData(stream, _session, callback) {
      stream.resume();
      stream.on('end', () => callback());
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return { port, passwordsSeen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/**
 * A real SMTP server offering STARTTLS with a self-signed certificate for the machine's name, as
 * a stock local MTA does (Debian's and Ubuntu's Postfix: the "snakeoil" certificate).
 */
async function startSnakeoilServer(): Promise<{ port: number; mails: number; close(): Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'smtp-tls-'));
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=mail.internal'], { stdio: 'ignore' });
  const state = { port: 0, mails: 0, close: () => Promise.resolve() };
  const server = new SMTPServer({
    key: fs.readFileSync(key),
    cert: fs.readFileSync(cert),
    authOptional: true,
    logger: false,
    onAuth(auth, _session, callback) {
      callback(null, { user: auth.username });
    },
    onData(stream, _session, callback) {
      stream.resume();
      stream.on('end', () => {
        state.mails++;
        callback();
      });
    },
  });
  fs.rmSync(dir, { recursive: true, force: true });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.port = (server.server.address() as AddressInfo).port;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}

function send(host: string, port: number, user?: string): Promise<unknown> {
  const transport = nodemailer.createTransport(smtpTransportOptions({ host, port, user, pass: 'smtp-password' }, { connectionMs: 5_000, socketMs: 5_000 }));
  return transport.sendMail({ from: 'gateway@alerts.test', to: 'oncall@acme.test', subject: 'alert', text: 'denied' }).finally(() => transport.close());
}

describe('smtpTransportOptions', () => {
  let server: Awaited<ReturnType<typeof startPlainServer>>;

  beforeEach(async () => {
    server = await startPlainServer();
  });
  afterEach(() => server.close());

  it('never sends the password to a server off this host that offers no STARTTLS: the mail fails', async () => {
    // 0.0.0.0 reaches this host's listeners but is not a loopback name: it stands for a remote server here.
    await expect(send('0.0.0.0', server.port, 'gateway')).rejects.toThrow(/STARTTLS/i);
    expect(server.passwordsSeen).toEqual([]);
  });

  it('sends over a plain connection to a relay on loopback, credentials included', async () => {
    await expect(send('127.0.0.1', server.port, 'gateway')).resolves.toBeDefined();
    await expect(send('localhost', server.port, 'gateway')).resolves.toBeDefined();
    expect(server.passwordsSeen).toEqual(['smtp-password', 'smtp-password']);
  });

  it('sends without credentials over a plain connection anywhere: there is nothing to protect', async () => {
    await expect(send('0.0.0.0', server.port)).resolves.toBeDefined();
    expect(server.passwordsSeen).toEqual([]);
  });

  it('takes the self-signed STARTTLS certificate of a relay on loopback, and checks it anywhere else', async () => {
    const relay = await startSnakeoilServer();
    try {
      await expect(send('127.0.0.1', relay.port)).resolves.toBeDefined();
      await expect(send('localhost', relay.port, 'gateway')).resolves.toBeDefined();
      expect(relay.mails).toBe(2);
      await expect(send('0.0.0.0', relay.port)).rejects.toThrow(/self[- ]signed|certificate/i);
      expect(relay.mails).toBe(2);
    } finally {
      await relay.close();
    }
  });

  it('uses TLS from the first byte on port 465', () => {
    expect(smtpTransportOptions({ host: 'smtp.example.com', port: 465, user: 'u', pass: 'p' }, { connectionMs: 1, socketMs: 1 })).toMatchObject({ secure: true, requireTLS: false });
  });
});
