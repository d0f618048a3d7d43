import { newId } from '../common/ids';
import { entryText, hashEntryText, StoredAudit } from './audit-chain';
import { compactInput } from './audit-input';
import type { AuditRecord } from './audit-record';
import { AuditSanitizer } from './audit-sanitizer';

/** Head of an organization's hash chain: the last sequence number and hash. */
export interface ChainHead {
  seq: number;
  hash: string;
}

/** Columns of audit_entries and the SQL type each has in the JSON rows sent to the database. */
const COLUMNS: ReadonlyArray<[column: string, type: string]> = [
  ['id', 'text'],
  ['ts', 'timestamptz'],
  ['org_id', 'text'],
  ['seq', 'bigint'],
  ['source', 'text'],
  ['kind', 'text'],
  ['trace_id', 'text'],
  ['agent_id', 'text'],
  ['agent_name', 'text'],
  ['trust_tier', 'text'],
  ['action', 'text'],
  ['method', 'text'],
  ['path', 'text'],
  ['decision', 'text'],
  ['enforced', 'boolean'],
  ['rate_limited', 'boolean'],
  ['policy_name', 'text'],
  ['rule', 'text'],
  ['reason', 'text'],
  ['decision_latency_ms', 'double precision'],
  ['latency_ms', 'double precision'],
  ['status', 'integer'],
  ['upstream_status', 'integer'],
  ['delegation_chain', 'json'],
  ['input', 'json'],
  ['details', 'json'],
  ['prev_hash', 'text'],
  ['hash', 'text'],
];
/**
 * Inserts a batch in one statement: the rows travel as a single JSON parameter (serialised
 * natively, parsed by PostgreSQL in C) rather than as 28 arrays the driver escapes element by
 * element. Payloads are embedded in each row as JSON, not as escaped strings: a `json` column
 * of json_to_recordset keeps the text of its value exactly, and so does the `json` column type.
 */
export const INSERT_AUDIT_ROWS_SQL = `INSERT INTO audit_entries (${COLUMNS.map(([column]) => column).join(', ')})
  SELECT ${COLUMNS.map(([column]) => column).join(', ')}
  FROM json_to_recordset($1::json) AS t(${COLUMNS.map(([column, type]) => `${column} ${type}`).join(', ')})`;

/**
 * Turns queued records into stored rows: cleans and redacts them, numbers them in their
 * organization's chain and hashes them, and renders each as one JSON object for the insert.
 */
export class AuditRowBuilder {
  private readonly clean: AuditSanitizer;

  constructor(redactedNames: readonly string[]) {
    this.clean = new AuditSanitizer(redactedNames);
  }

  /**
   * The row for `record`, extending `head` (which is advanced). With `stripPayloads`, input
   * and details are left out: the retry of a batch the database refused.
   */
  build(record: AuditRecord, head: ChainHead, stripPayloads = false): string {
    const clean = this.clean;
    const stored: StoredAudit = {
      id: newId('aud'),
      ts: record.ts,
      orgId: record.orgId,
      seq: head.seq + 1,
      source: record.source,
      kind: record.kind,
      traceId: clean.text(record.traceId),
      agentId: clean.text(record.agentId),
      agentName: clean.text(record.agentName),
      trustTier: clean.text(record.trustTier),
      action: clean.text(record.action)!,
      method: clean.text(record.method),
      path: clean.text(record.path),
      decision: record.decision,
      enforced: record.enforced,
      rateLimited: record.rateLimited,
      policyName: clean.text(record.policyName),
      rule: clean.text(record.rule),
      reason: clean.text(record.reason),
      decisionLatencyMs: roundMs(record.decisionLatencyMs),
      latencyMs: roundMs(record.latencyMs),
      status: record.status,
      upstreamStatus: record.upstreamStatus,
      delegationChain: clean.serialize(record.delegationChain),
      input: stripPayloads ? null : clean.serialize(compactInput(record.input)),
      details: stripPayloads ? '{"unstorable":true}' : clean.serialize(record.details),
    };
    const text = entryText(stored);
    const hash = hashEntryText(head.hash, text);
    const row = `${text.slice(0, -1)},"prev_hash":"${head.hash}","hash":"${hash}"}`;
    head.seq = stored.seq;
    head.hash = hash;
    return row;
  }
}

/** Latencies are kept to the microsecond, so the stored value hashes the same when read back. */
export function roundMs(value: number | null): number | null {
  return value === null || !Number.isFinite(value) ? null : Math.round(value * 1000) / 1000;
}
