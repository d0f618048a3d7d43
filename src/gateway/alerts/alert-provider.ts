import type { Alert } from './alert';

export type AlertProviderName = 'webhook' | 'chat' | 'email';

/** One delivery channel. `send` makes one attempt; the caller retries. */
export interface AlertProvider {
  readonly name: AlertProviderName;
  /** What it sends to, for `ags alerts providers` (no secrets). */
  readonly target: string;
  /** Resolves once the receiver took the alert; rejects (an AlertSendError) when it did not. */
  send(alert: Alert): Promise<void>;
  close(): Promise<void>;
}

/** A failed attempt: the receiver's status when it answered, and how long it asked to wait (Retry-After). */
export class AlertSendError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}
