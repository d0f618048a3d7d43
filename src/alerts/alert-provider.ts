import type { Alert } from './alert';

export type AlertProviderName = 'webhook' | 'chat' | 'email';

/** One delivery channel. `send` makes one attempt and throws when it fails; the caller retries. */
export interface AlertProvider {
  readonly name: AlertProviderName;
  /** What it sends to, for `ags alerts providers` (no secrets). */
  readonly target: string;
  send(alert: Alert): Promise<void>;
  close(): Promise<void>;
}

/** A failed attempt: the receiver's status when it answered. */
export class AlertSendError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}
