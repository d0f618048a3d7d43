import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import type { AuditRecord } from '../audit/audit-record';
import { LOGGER } from '../logging/logging.module';
import type { Decision } from '../policy-engine/types';

/** One recorded decision, from any entry point: its audit entry and the engine's decision. */
export interface DecisionEvent {
  /** The entry as recorded (its `id` is the decision id). */
  entry: AuditRecord & { id: string };
  decision: Decision;
}

export type DecisionListener = (event: DecisionEvent) => void;

/**
 * The per-decision event that alerting and metrics subscribe to. Listeners are called in the
 * decision's turn of the event loop and must only queue their work: a listener never delays or
 * fails a decision (one that throws is logged and skipped).
 */
@Injectable()
export class DecisionEvents {
  private listeners: readonly DecisionListener[] = [];

  constructor(@Inject(LOGGER) private readonly logger: Logger) {}

  /** Adds a listener; returns its removal. */
  subscribe(listener: DecisionListener): () => void {
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((candidate) => candidate !== listener);
    };
  }

  emit(event: DecisionEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.logger.error({ err: error, decisionId: event.entry.id }, 'decision listener failed');
      }
    }
  }
}
