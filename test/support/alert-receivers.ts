import { createHmac, timingSafeEqual } from 'node:crypto';
import http, { IncomingHttpHeaders } from 'node:http';
import net, { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** One request an alert receiver got. */
export interface ReceivedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body, as signed. */
  raw: string;
  json: Record<string, unknown>;
  /** The status the receiver answered. */
  answered: number;
}

/**
 * A real HTTP server receiving alerts (webhook, chat or email API). It answers 500 to its
 * first `failFirst` requests, then 200, and records them all.
 */
export interface AlertReceiver {
  url: string;
  requests: ReceivedRequest[];
  /** The requests answered 200 whose JSON matches `pick`. */
  accepted(pick?: (request: ReceivedRequest) => boolean): ReceivedRequest[];
  /** Waits until `count` accepted requests match `pick` (or 10 s pass), and returns them. */
  waitFor(count: number, pick?: (request: ReceivedRequest) => boolean, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startAlertReceiver(options: { failFirst?: number } = {}): Promise<AlertReceiver> {
  const requests: ReceivedRequest[] = [];
  let failures = options.failFirst ?? 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const answered = failures > 0 ? 500 : 200;
      if (failures > 0) failures--;
      let json: Record<string, unknown>;
      try {
        json = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        json = {};
      }
      requests.push({ path: request.url ?? '', headers: request.headers, raw, json, answered });
      response.writeHead(answered, { 'content-type': 'application/json' });
      response.end(answered === 200 ? JSON.stringify({ id: `received_${requests.length}` }) : '{"error":"try again"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const accepted = (pick: (request: ReceivedRequest) => boolean = () => true) => requests.filter((request) => request.answered === 200 && pick(request));
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    accepted,
    waitFor: async (count, pick, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      while (accepted(pick).length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      return accepted(pick);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** What a webhook receiver checks, as docs/alerts.md tells receivers to. */
export interface SignatureCheck {
  /** X-Service-Signature is HMAC-SHA256(secret, raw body), compared in constant time. */
  bodySignature: boolean;
  /** X-Service-Signature-V2 is HMAC-SHA256(secret, `<X-Service-Timestamp>.<raw body>`). */
  timestampedSignature: boolean;
  /** X-Service-Timestamp is within 5 minutes of now. */
  fresh: boolean;
}

export function checkSignature(secret: string, request: ReceivedRequest, nowSeconds = Date.now() / 1000): SignatureCheck {
  const timestamp = String(request.headers['x-service-timestamp'] ?? '');
  return {
    bodySignature: sameSignature(request.headers['x-service-signature'], hmac(secret, request.raw)),
    timestampedSignature: sameSignature(request.headers['x-service-signature-v2'], hmac(secret, `${timestamp}.${request.raw}`)),
    fresh: /^\d+$/.test(timestamp) && Math.abs(nowSeconds - Number(timestamp)) <= 300,
  };
}

function hmac(secret: string, text: string): string {
  return `sha256=${createHmac('sha256', secret).update(text).digest('hex')}`;
}

function sameSignature(received: string | string[] | undefined, expected: string): boolean {
  if (typeof received !== 'string') return false;
  const a = Buffer.from(received);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** One mail the SMTP server received. */
export interface ReceivedMail {
  from: string;
  to: string[];
  user: string | undefined;
  subject: string;
  /** The text body, quoted-printable decoded. */
  text: string;
}

/** A real SMTP server (smtp-server) that requires `user`/`pass`, refuses the recipients in `refuse` (550) and keeps every mail. */
export interface SmtpReceiver {
  port: number;
  mails: ReceivedMail[];
  waitFor(count: number, pick?: (mail: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

export async function startSmtpReceiver(user: string, pass: string, refuse: readonly string[] = []): Promise<SmtpReceiver> {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === user && auth.password === pass) callback(null, { user });
      else callback(new Error('Invalid username or password'));
    },
    onRcptTo(address, _session, callback) {
      if (refuse.includes(address.address)) callback(Object.assign(new Error('No such user here'), { responseCode: 550 }));
      else callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        mails.push(parseMail(Buffer.concat(chunks).toString('utf8'), session));
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  const matching = (pick: (mail: ReceivedMail) => boolean = () => true) => mails.filter(pick);
  return {
    port,
    mails,
    waitFor: async (count, pick, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      while (matching(pick).length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      return matching(pick);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function parseMail(raw: string, session: { envelope: { mailFrom: false | { address: string }; rcptTo: Array<{ address: string }> }; user?: unknown }): ReceivedMail {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const body = raw.slice(split + 4);
  const subject = /^Subject: (.*)$/im.exec(head)?.[1] ?? '';
  const quotedPrintable = /^Content-Transfer-Encoding: quoted-printable/im.test(head);
  const text = quotedPrintable ? body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) : body;
  return {
    from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
    to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
    user: typeof session.user === 'string' ? session.user : undefined,
    subject,
    text: text.replace(/\r\n/g, '\n'),
  };
}

/**
 * A receiver that answers every request with one chunk announced as 2 GB and streams it, a
 * megabyte every 5 ms, until the connection closes: waiting for the whole answer would buffer it.
 */
export async function startEndlessChunkedReceiver(): Promise<{ port: number; close(): Promise<void> }> {
  const streams = new Set<NodeJS.Timeout>();
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('data', () => {
      socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n7fffffff\r\n');
      const megabyte = 'x'.repeat(1024 * 1024);
      const stream = setInterval(() => socket.writable && socket.write(megabyte), 5);
      streams.add(stream);
      socket.on('close', () => clearInterval(stream));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      for (const stream of streams) clearInterval(stream);
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
