import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** One message as the SMTP server received it. */
export interface ReceivedMail {
  from: string;
  to: string[];
  /** Headers and body, quoted-printable soft breaks and escapes decoded. */
  raw: string;
}

/** A real SMTP server on loopback that keeps every message it receives. */
export class SmtpSink {
  readonly messages: ReceivedMail[] = [];
  /** Recipients refused with a temporary failure, one entry per refusal. */
  readonly refused: string[] = [];
  private readonly refusals = new Map<string, number>();
  private readonly waiters: Array<() => void> = [];
  private readonly server: SMTPServer;

  private constructor() {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onRcptTo: (address, _session, callback) => {
        const key = address.address.toLowerCase();
        const left = this.refusals.get(key) ?? 0;
        if (left === 0) return callback();
        this.refusals.set(key, left - 1);
        this.refused.push(key);
        callback(Object.assign(new Error('Mailbox busy, try again later'), { responseCode: 451 }));
      },
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          this.messages.push({
            from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
            to: session.envelope.rcptTo.map((recipient) => recipient.address),
            raw: decodeQuotedPrintable(Buffer.concat(chunks).toString('utf8')),
          });
          this.waiters.splice(0).forEach((wake) => wake());
          callback();
        });
      },
    });
  }

  static async start(): Promise<SmtpSink> {
    const sink = new SmtpSink();
    await new Promise<void>((resolve) => sink.server.listen(0, '127.0.0.1', resolve));
    return sink;
  }

  get port(): number {
    return (this.server.server.address() as AddressInfo).port;
  }

  /** Refuses the next `count` messages to `to` with 451, as a mail server restarting or greylisting does. */
  refuseNext(to: string, count: number): void {
    this.refusals.set(to.toLowerCase(), count);
  }

  /** The first message to `to` (any case), waiting for it up to `timeoutMs`. */
  async waitFor(to: string, timeoutMs = 10_000): Promise<ReceivedMail> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find((message) => message.to.some((address) => address.toLowerCase() === to.toLowerCase()));
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no mail to ${to} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function decodeQuotedPrintable(text: string): string {
  return text.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_match, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}
