/**
 * What the client records of a call and sends in POST /v1/audit batches (docs/pdp.md "Batches"
 * in the repository). Its own module: the client, the batcher, the write-ahead file and the HTTP
 * transport all speak of an event, and none of them owns the word.
 */

/** What an audited call did (POST /v1/audit without the ids the client fills in). */
export interface AuditRecord {
  plugin: string;
  function: string;
  decision: 'allow' | 'deny';
  durationMs: number;
  resultSummary?: string;
  decisionId?: string;
  traceId?: string;
}

/** One event of a POST /v1/audit batch: what became of a checked call, with what the client fills in. */
export interface AuditEvent extends AuditRecord {
  eventId: string;
  agentId: string;
  /** When the call happened (ISO 8601): the entry is stamped with it, however late it is delivered. */
  occurredAt: string;
  /** The decision was applied from the cache, without asking the gateway; decisionId names the one reused. */
  cached?: boolean;
}

/** The most events one POST /v1/audit takes (README "Audit write-ahead file"). */
export const MAX_AUDIT_BATCH = 500;
