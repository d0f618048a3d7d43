import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { Logger } from 'pino';
import { LOGGER } from '../../core/logging/logging.module';
import { BillingMail, BillingMailer } from './billing-mailer';

/** Waits before the second, third and fourth try. */
const RETRY_DELAYS_MS = [1_000, 5_000, 30_000];

/** Who a confirmation is about; `createdOrgId` when the mail carries a new organization's admin token. */
export interface ConfirmationSubject {
  orgId: string;
  createdOrgId?: string;
}

/**
 * Sends checkout confirmations in the background, trying again when a send fails. The webhook
 * used to wait for the mail server (10 s when it did not answer) and gave up on the first
 * failure, while the mail of a checkout that created an organization is the only place its
 * admin token was ever written: a mail server down for a moment lost a paying customer's token.
 */
@Injectable()
export class ConfirmationSender implements OnApplicationShutdown {
  private readonly waits = new Map<NodeJS.Timeout, () => void>();
  private closing = false;

  constructor(
    private readonly mailer: BillingMailer,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Queues the mail; failures are logged, the last one with what to do instead. */
  send(mail: BillingMail, subject: ConfirmationSubject): void {
    if (!this.mailer.enabled) {
      if (subject.createdOrgId !== undefined) this.logger.warn({ orgId: subject.createdOrgId }, `checkout created an organization but no email transport is configured: ${remedy(subject.createdOrgId)}`);
      return;
    }
    void this.sendWithRetries(mail, subject);
  }

  onApplicationShutdown(): void {
    this.closing = true;
    for (const [timer, wake] of this.waits) {
      clearTimeout(timer);
      wake();
    }
  }

  private async sendWithRetries(mail: BillingMail, subject: ConfirmationSubject): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const failure = await this.tryToSend(mail, subject, attempt);
      if (failure === null) return;
      const delay = RETRY_DELAYS_MS[attempt - 1];
      if (delay === undefined) return this.giveUp(subject, attempt, failure);
      this.logger.warn({ orgId: subject.orgId, attempt, err: failure, retryInMs: delay }, 'checkout confirmation email failed; trying again');
      await this.wait(delay);
      if (this.closing) return this.giveUp(subject, attempt, failure);
    }
  }

  /** Null when sent, else what went wrong. */
  private async tryToSend(mail: BillingMail, subject: ConfirmationSubject, attempt: number): Promise<{ message: string } | null> {
    try {
      await this.mailer.send(mail);
      this.logger.info({ orgId: subject.orgId, attempt }, 'checkout confirmation email sent');
      return null;
    } catch (error) {
      return { message: (error as Error).message };
    }
  }

  private giveUp(subject: ConfirmationSubject, attempts: number, err: { message: string }): void {
    const lost = subject.createdOrgId === undefined ? '' : `: ${remedy(subject.createdOrgId)}`;
    this.logger.error({ orgId: subject.orgId, attempts, err }, `checkout confirmation email could not be sent${lost}`);
  }

  private wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waits.delete(timer);
        resolve();
      }, ms);
      this.waits.set(timer, resolve);
    });
  }
}

function remedy(orgId: string): string {
  return `its admin token was not delivered; issue one with \`ags orgs rotate-token ${orgId}\``;
}
