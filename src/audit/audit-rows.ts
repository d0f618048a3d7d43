import { copyValue, entryHead, hashEntryText } from './audit-chain';
import type { QueuedParts } from './audit-record';

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
  /** The canonical text (`entryText`). */
  text: string;
  prevHash: string;
  hash: string;
}

/** The entry's line for COPY: its canonical text and the two hash columns. */
export function copyLine(chained: ChainedEntry): string {
  return `${chained.text}\t${chained.prevHash}\t${chained.hash}\n`;
}

/**
 * The entry as a JSON object for INSERT_AUDIT_ROWS_SQL, its fields read back from the canonical
 * text by column type; payloads are spliced in as their stored text.
 */
export function jsonRow({ text, prevHash, hash }: ChainedEntry): string {
  const fields = text.split('\t');
  const parts: string[] = [];
  for (let i = 0; i < fields.length; i++) {
    const [column, type] = AUDIT_COLUMNS[i];
    parts.push(`${JSON.stringify(column)}:${jsonValue(copyValue(fields[i]), type)}`);
  }
  return `{${parts.join(',')},"prev_hash":${JSON.stringify(prevHash)},"hash":${JSON.stringify(hash)}}`;
}

function jsonValue(value: string | null, type: string): string {
  if (value === null) return 'null';
  switch (type) {
    case 'boolean':
      return value === 't' ? 'true' : 'false';
    case 'text':
    case 'timestamptz':
      return JSON.stringify(value);
    default:
      // Numbers and JSON payloads: their COPY text is already JSON.
      return value;
  }
}

/** Content of a batch the database refused, retried without its payloads: input and details are the last two columns. */
const STRIPPED_PAYLOADS = '\t\\N\t{"unstorable":true}';

/**
 * The stored row for a queued record (split by `queuedParts`): numbered and hashed as the next
 * entry after `head`, which is advanced. With `stripPayloads`, input and details are left out:
 * the retry of a batch the database refused.
 */
export function chainRow({ id, ts, orgIdText, content }: QueuedParts, head: ChainHead, stripPayloads = false): ChainedEntry {
  const seq = head.seq + 1;
  const text = entryHead(id, ts, orgIdText, seq) + (stripPayloads ? withoutPayloads(content) : content);
  const prevHash = head.hash;
  const hash = hashEntryText(prevHash, text);
  head.seq = seq;
  head.hash = hash;
  return { text, prevHash, hash };
}

function withoutPayloads(content: string): string {
  const beforeDetails = content.lastIndexOf('\t');
  return content.slice(0, content.lastIndexOf('\t', beforeDetails - 1)) + STRIPPED_PAYLOADS;
}
