import pino from 'pino';
import { Writable } from 'node:stream';
import { BillingMail, BillingMailer } from './billing-mailer';
import { ConfirmationSender } from './confirmation-sender';

/** A mailer whose sends fail until `failures` is used up. */
class FlakyMailer extends BillingMailer {
  readonly enabled = true;
  readonly sent: BillingMail[] = [];
  attempts = 0;

  constructor(private failures: number) {
    super();
  }

  async send(mail: BillingMail): Promise<void> {
    this.attempts += 1;
    if (this.failures-- > 0) throw new Error('connect ECONNREFUSED 127.0.0.1:2525');
    this.sent.push(mail);
  }
}

function capturedLogger(): { logger: pino.Logger; lines: Array<{ level: number; msg: string; attempts?: number }> } {
  const lines: Array<{ level: number; msg: string }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

const MAIL: BillingMail = { to: 'ada@example.com', subject: 'Welcome', text: 'adm_secret' };

describe('ConfirmationSender', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('tries four times, 1 s, 5 s and 30 s apart, then names the way to a new admin token', async () => {
    const mailer = new FlakyMailer(Infinity);
    const { logger, lines } = capturedLogger();
    new ConfirmationSender(mailer, logger).send(MAIL, { orgId: 'org_1', createdOrgId: 'org_1' });
    for (const [delay, attempts] of [[999, 1], [1, 2], [5_000, 3], [29_999, 3], [1, 4], [60_000, 4]]) {
      await jest.advanceTimersByTimeAsync(delay);
      expect(mailer.attempts).toBe(attempts);
    }
    const last = lines.at(-1)!;
    expect(last).toMatchObject({ level: 50, attempts: 4, msg: 'checkout confirmation email could not be sent: its admin token was not delivered; issue one with `ags orgs rotate-token org_1`' });
    expect(JSON.stringify(lines)).not.toContain('adm_secret');
  });

  it('stops at the first success', async () => {
    const mailer = new FlakyMailer(1);
    const { logger, lines } = capturedLogger();
    new ConfirmationSender(mailer, logger).send(MAIL, { orgId: 'org_1' });
    await jest.advanceTimersByTimeAsync(60_000);
    expect(mailer.attempts).toBe(2);
    expect(mailer.sent).toEqual([MAIL]);
    expect(lines.map((line) => line.msg)).toEqual(['checkout confirmation email failed; trying again', 'checkout confirmation email sent']);
  });

  it('gives up waiting at shutdown and says what was not delivered', async () => {
    const mailer = new FlakyMailer(Infinity);
    const { logger, lines } = capturedLogger();
    const sender = new ConfirmationSender(mailer, logger);
    sender.send(MAIL, { orgId: 'org_2', createdOrgId: 'org_2' });
    await jest.advanceTimersByTimeAsync(0);
    sender.onApplicationShutdown();
    await jest.advanceTimersByTimeAsync(0);
    expect(mailer.attempts).toBe(1);
    expect(lines.at(-1)!.msg).toContain('`ags orgs rotate-token org_2`');
    expect(jest.getTimerCount()).toBe(0);
  });
});
