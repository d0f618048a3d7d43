import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import type { ErrorResponse } from '../common/error-body';
import { ErrorCode } from '../common/error-code';
import { Listeners } from '../common/listeners';
import { LOGGER } from '../logging/logging.module';

/** The request a failure answered, as far as it is known before any decision. */
export interface FailedRequest {
  traceId: string;
  /** The HTTP method; '' over gRPC. */
  method: string;
  /** The path asked for: the proxied path (without `/proxy`), a route's path, a gRPC method's path. */
  path: string;
}

/** A request the gateway failed itself, before deciding it. */
export interface RequestFailure extends FailedRequest {
  /** The HTTP status answered (over gRPC: the status of the same error over HTTP). */
  status: number;
  /** The error's message, as the caller got it. */
  message: string;
}

export type FailureListener = (failure: RequestFailure) => void;

/**
 * Requests the gateway answered with a failure of its own (a 5xx: its database unreachable, a
 * fault of ours) before a decision was made, so no DecisionEvent tells of them; alerting's
 * `error` trigger listens here too. Listeners only queue their work, as DecisionEvents' do.
 */
@Injectable()
export class RequestFailures {
  private readonly listeners: Listeners<RequestFailure>;

  constructor(@Inject(LOGGER) logger: Logger) {
    this.listeners = new Listeners((error, failure) => logger.error({ err: error, traceId: failure.traceId }, 'request failure listener failed'));
  }

  /** Adds a listener; returns its removal. */
  subscribe(listener: FailureListener): () => void {
    return this.listeners.subscribe(listener);
  }

  /**
   * Tells the listeners of `request` answered with `answer`, when that is a failure: a 5xx other
   * than `billing_disabled` (billing not configured is a setting, not a failure).
   */
  answered(request: FailedRequest, answer: ErrorResponse): void {
    if (answer.status < 500 || answer.body.error === ErrorCode.BillingDisabled || this.listeners.empty) return;
    this.listeners.emit({ ...request, status: answer.status, message: String(answer.body.message) });
  }
}
