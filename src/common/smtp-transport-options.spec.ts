import type { AddressInfo } from 'node:net';
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

  it('uses TLS from the first byte on port 465', () => {
    expect(smtpTransportOptions({ host: 'smtp.example.com', port: 465, user: 'u', pass: 'p' }, { connectionMs: 1, socketMs: 1 })).toMatchObject({ secure: true, requireTLS: false });
  });
});
