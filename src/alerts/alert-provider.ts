import type { Alert } from './alert';

export type AlertProviderName = 'webhook' | 'chat' | 'email';

/** Told how one attempt to send an alert went (a callback object: no promise or closure per alert). */
export interface AttemptListener {
  sent(): void;
  failed(error: Error): void;
}

/** One delivery channel. `send` makes one attempt and tells `attempt` how it went; the caller retries. */
export interface AlertProvider {
  readonly name: AlertProviderName;
  /** What it sends to, for `ags alerts providers` (no secrets). */
  readonly target: string;
  send(alert: Alert, attempt: AttemptListener): void;
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
