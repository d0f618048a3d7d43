import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import type { AuditRecord } from '../audit-record/audit-record';
import { Listeners } from '../common/listeners';
import { LOGGER } from '../logging/logging.module';
import type { Decision } from '../policy-engine/types';

/** One recorded decision, from any entry point: its audit entry and the engine's decision. */
export interface DecisionEvent {
  /** The entry as recorded (its `id` is the decision id). */
  entry: AuditRecord & { id: string };
  decision: Decision;
  /** True for an edge decision the gateway received from a sidecar: decided there, not by this process (its metrics and spans are the sidecar's). */
  ingested?: boolean;
}

/**
 * A request refused before any decision because its organization has used its monthly policy
 * checks (429 `quota_exceeded`): not a decision, so not in the audit trail, but the team wants
 * to hear that its agents are being turned away.
 */
export interface QuotaRefusal extends Pick<AuditRecord, 'ts' | 'orgId' | 'traceId' | 'agentId' | 'agentName' | 'trustTier' | 'action' | 'method' | 'path'> {
  /** The refusal's message, as the caller got it. */
  reason: string;
}

export type DecisionListener = (event: DecisionEvent) => void;

/**
 * The per-decision event that alerting subscribes to, and the quota refusals that stand in for
 * decisions. Listeners are called in the decision's turn of the event loop and must only queue
 * their work: a listener never delays or fails a decision (one that throws is logged and skipped).
 */
@Injectable()
export class DecisionEvents {
  private readonly decisions: Listeners<DecisionEvent>;
  private readonly quotaRefusals: Listeners<QuotaRefusal>;

  constructor(@Inject(LOGGER) logger: Logger) {
    this.decisions = new Listeners((error, event) => logger.error({ err: error, decisionId: event.entry.id }, 'decision listener failed'));
    this.quotaRefusals = new Listeners((error, refusal) => logger.error({ err: error, traceId: refusal.traceId }, 'quota refusal listener failed'));
  }

  /** Adds a decision listener; returns its removal. */
  subscribe(listener: DecisionListener): () => void {
    return this.decisions.subscribe(listener);
  }

  emit(event: DecisionEvent): void {
    this.decisions.emit(event);
  }

  /** Adds a quota refusal listener; returns its removal. */
  subscribeQuotaRefusals(listener: (refusal: QuotaRefusal) => void): () => void {
    return this.quotaRefusals.subscribe(listener);
  }

  quotaRefused(refusal: QuotaRefusal): void {
    this.quotaRefusals.emit(refusal);
  }
}
