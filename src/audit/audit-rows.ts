import { newId } from '../common/ids';
import { entryText, hashEntryText, StoredAudit } from './audit-chain';
import type { QueuedAudit } from './audit-record';

/** Head of an organization's hash chain: the last sequence number and hash. */
export interface ChainHead {
  seq: number;
  hash: string;
}

/**
 * Columns of audit_entries in the order of the canonical text (then the two hash columns), with
 * the SQL type each has in the JSON rows of the embedded database's insert.
 */
export const AUDIT_COLUMNS: ReadonlyArray<[column: string, type: string]> = [
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
/** Writes a batch of canonical lines (see `copyLine`): the cheapest way into PostgreSQL, parsed in C. */
export const COPY_AUDIT_ROWS_SQL = `COPY audit_entries (${AUDIT_COLUMNS.map(([column]) => column).join(', ')}) FROM STDIN`;

/**
 * The same batch as one statement for the embedded database, whose socket server cannot take
 * COPY FROM STDIN: the rows travel as a single JSON parameter (see `jsonRow`). A `json` column
 * of json_to_recordset keeps the text of its value exactly, and so does the `json` column type.
 */
export const INSERT_AUDIT_ROWS_SQL = `INSERT INTO audit_entries (${AUDIT_COLUMNS.map(([column]) => column).join(', ')})
  SELECT ${AUDIT_COLUMNS.map(([column]) => column).join(', ')}
  FROM json_to_recordset($1::json) AS t(${AUDIT_COLUMNS.map(([column, type]) => `${column} ${type}`).join(', ')})`;

/** An entry numbered and hashed in its organization's chain. */
export interface ChainedEntry {
  entry: StoredAudit;
  /** The canonical text (`entryText`). */
  text: string;
  prevHash: string;
  hash: string;
}

/** The entry's line for COPY: its canonical text and the two hash columns. */
export function copyLine(chained: ChainedEntry): string {
  return `${chained.text}\t${chained.prevHash}\t${chained.hash}\n`;
}

/** The entry as a JSON object for INSERT_AUDIT_ROWS_SQL, payloads spliced in as their stored text. */
export function jsonRow({ entry, prevHash, hash }: ChainedEntry): string {
  const scalars = JSON.stringify({
    id: entry.id,
    ts: new Date(entry.ts).toISOString(),
    org_id: entry.orgId,
    seq: entry.seq,
    source: entry.source,
    kind: entry.kind,
    trace_id: entry.traceId,
    agent_id: entry.agentId,
    agent_name: entry.agentName,
    trust_tier: entry.trustTier,
    action: entry.action,
    method: entry.method,
    path: entry.path,
    decision: entry.decision,
    enforced: entry.enforced,
    rate_limited: entry.rateLimited,
    policy_name: entry.policyName,
    rule: entry.rule,
    reason: entry.reason,
    decision_latency_ms: entry.decisionLatencyMs,
    latency_ms: entry.latencyMs,
    status: entry.status,
    upstream_status: entry.upstreamStatus,
    prev_hash: prevHash,
    hash,
  });
  return `${scalars.slice(0, -1)},"delegation_chain":${entry.delegationChain ?? 'null'},"input":${entry.input ?? 'null'},"details":${entry.details ?? 'null'}}`;
}

/**
 * The stored row for a queued record (already cleaned, see `queuedAudit`): numbered and hashed
 * as the next entry after `head`, which is advanced. With `stripPayloads`, input and details
 * are left out: the retry of a batch the database refused.
 */
export function chainRow(record: QueuedAudit, head: ChainHead, stripPayloads = false): ChainedEntry {
  // Field by field: a spread of the record with overrides is several times slower here.
  const stored: StoredAudit = {
    id: newId('aud'),
    ts: record.ts,
    orgId: record.orgId,
    seq: head.seq + 1,
    source: record.source,
    kind: record.kind,
    traceId: record.traceId,
    agentId: record.agentId,
    agentName: record.agentName,
    trustTier: record.trustTier,
    action: record.action,
    method: record.method,
    path: record.path,
    decision: record.decision,
    enforced: record.enforced,
    rateLimited: record.rateLimited,
    policyName: record.policyName,
    rule: record.rule,
    reason: record.reason,
    decisionLatencyMs: roundMs(record.decisionLatencyMs),
    latencyMs: roundMs(record.latencyMs),
    status: record.status,
    upstreamStatus: record.upstreamStatus,
    delegationChain: record.delegationChain,
    input: stripPayloads ? null : record.input,
    details: stripPayloads ? '{"unstorable":true}' : record.details,
  };
  const text = entryText(stored);
  const prevHash = head.hash;
  const hash = hashEntryText(prevHash, text);
  head.seq = stored.seq;
  head.hash = hash;
  return { entry: stored, text, prevHash, hash };
}

/** Latencies are kept to the microsecond, so the stored value hashes the same when read back. */
export function roundMs(value: number | null): number | null {
  return value === null || !Number.isFinite(value) ? null : Math.round(value * 1000) / 1000;
}
