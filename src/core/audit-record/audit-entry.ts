/**
 * The audit entry, defined once: its columns in canonical order, and what derives from them —
 * the StoredAudit type, the canonical (hashed) text, the column lists of the batch writes, and
 * the mapping of a row read back. Plain code with no Nest: the audit worker thread loads it.
 */

/** How a column is stored, and so how it reads back and how it is written in the canonical text. */
export type AuditColumnType = 'text' | 'timestamptz' | 'bigint' | 'boolean' | 'double precision' | 'integer' | 'json';

export interface AuditColumn {
  /** The property of StoredAudit. */
  field: string;
  /** The column of audit_entries. */
  column: string;
  type: AuditColumnType;
  nullable: boolean;
}

/**
 * The columns of the canonical text, in its order. The first four are the entry's place (id,
 * time, organization, position in the chain); the rest, from `source` on, its content. Payloads
 * (`json`) are held as the exact JSON text stored, which PostgreSQL keeps byte for byte.
 * Changing this list changes every entry's hash: stored chains would no longer verify.
 */
export const AUDIT_ENTRY_COLUMNS = [
  { field: 'id', column: 'id', type: 'text', nullable: false },
  { field: 'ts', column: 'ts', type: 'timestamptz', nullable: false },
  { field: 'orgId', column: 'org_id', type: 'text', nullable: false },
  { field: 'seq', column: 'seq', type: 'bigint', nullable: false },
  { field: 'source', column: 'source', type: 'text', nullable: false },
  { field: 'kind', column: 'kind', type: 'text', nullable: false },
  { field: 'traceId', column: 'trace_id', type: 'text', nullable: true },
  { field: 'agentId', column: 'agent_id', type: 'text', nullable: true },
  { field: 'agentName', column: 'agent_name', type: 'text', nullable: true },
  { field: 'trustTier', column: 'trust_tier', type: 'text', nullable: true },
  { field: 'action', column: 'action', type: 'text', nullable: false },
  { field: 'method', column: 'method', type: 'text', nullable: true },
  { field: 'path', column: 'path', type: 'text', nullable: true },
  { field: 'decision', column: 'decision', type: 'text', nullable: false },
  { field: 'enforced', column: 'enforced', type: 'boolean', nullable: false },
  { field: 'rateLimited', column: 'rate_limited', type: 'boolean', nullable: false },
  { field: 'policyName', column: 'policy_name', type: 'text', nullable: true },
  { field: 'rule', column: 'rule', type: 'text', nullable: true },
  { field: 'reason', column: 'reason', type: 'text', nullable: true },
  { field: 'decisionLatencyMs', column: 'decision_latency_ms', type: 'double precision', nullable: true },
  { field: 'latencyMs', column: 'latency_ms', type: 'double precision', nullable: true },
  { field: 'status', column: 'status', type: 'integer', nullable: true },
  { field: 'upstreamStatus', column: 'upstream_status', type: 'integer', nullable: true },
  { field: 'delegationChain', column: 'delegation_chain', type: 'json', nullable: true },
  { field: 'input', column: 'input', type: 'json', nullable: true },
  { field: 'details', column: 'details', type: 'json', nullable: true },
] as const satisfies readonly AuditColumn[];

/** The two hash columns stored after the canonical ones (not part of the hashed text). */
export const AUDIT_HASH_COLUMNS = [
  { field: 'prevHash', column: 'prev_hash', type: 'text', nullable: false },
  { field: 'hash', column: 'hash', type: 'text', nullable: false },
] as const satisfies readonly AuditColumn[];

/** Canonical columns that place the entry (id, ts, org_id, seq); the content follows. */
const PLACE_COLUMNS = 4;

type CanonicalColumn = (typeof AUDIT_ENTRY_COLUMNS)[number];
type HashColumn = (typeof AUDIT_HASH_COLUMNS)[number];
type ValueOf<C extends AuditColumn> =
  | (C['type'] extends 'boolean' ? boolean : C['type'] extends 'text' | 'json' ? string : number)
  | (C['nullable'] extends true ? null : never);

/** An audit entry exactly as stored and hashed: `ts` in milliseconds, payloads as their JSON text. */
export type StoredAudit = { [C in CanonicalColumn as C['field']]: ValueOf<C> };
/** A stored entry with its two hash columns. */
export type ChainedAudit = StoredAudit & { [C in HashColumn as C['field']]: ValueOf<C> };
export type AuditField = keyof ChainedAudit;
/** An entry's content: every canonical column except the four its place in the chain sets. */
export type AuditContent = Omit<StoredAudit, 'id' | 'ts' | 'orgId' | 'seq'>;

const ALL_COLUMNS: readonly AuditColumn[] = [...AUDIT_ENTRY_COLUMNS, ...AUDIT_HASH_COLUMNS];
const COLUMN_OF_FIELD = new Map(ALL_COLUMNS.map((column) => [column.field, column]));

/** The stored columns (canonical ones, then the hashes), as the COPY and INSERT of a batch name them. */
export const AUDIT_COLUMN_LIST = ALL_COLUMNS.map((column) => column.column).join(', ');

/** Position of each canonical column's field in the canonical text (its tab-separated fields). */
export const AUDIT_TEXT_INDEX = Object.fromEntries(AUDIT_ENTRY_COLUMNS.map((column, index) => [column.field, index])) as {
  [C in CanonicalColumn as C['field']]: number;
};

// ---- The canonical text ---------------------------------------------------------------------

/** How a column's value is written in the canonical text. */
const TextFormat = { Text: 0, Number: 1, Boolean: 2 } as const;
type TextFormat = (typeof TextFormat)[keyof typeof TextFormat];

/** The content columns (from `source` on), in canonical order. */
export const AUDIT_CONTENT_COLUMNS: readonly AuditColumn[] = AUDIT_ENTRY_COLUMNS.slice(PLACE_COLUMNS);
const CONTENT_FIELDS = AUDIT_CONTENT_COLUMNS.map((column) => column.field);
const CONTENT_FORMATS = AUDIT_CONTENT_COLUMNS.map((column) => textFormat(column.type));

function textFormat(type: AuditColumnType): TextFormat {
  if (type === 'boolean') return TextFormat.Boolean;
  if (type === 'text' || type === 'json') return TextFormat.Text;
  return TextFormat.Number;
}

/**
 * The canonical text of an entry: its columns in the order of AUDIT_ENTRY_COLUMNS, as one line
 * of PostgreSQL's COPY text format (tab-separated, `\N` for null, backslash escapes; no
 * newline), payloads as their stored JSON text. It is hashed, and with the two hash columns
 * appended it is also the line the batch COPY sends, so each entry is serialised once; the
 * verifier rebuilds the same text from the columns it reads back. The escapes keep it
 * unambiguous: no value can contain a column boundary or pass for a null.
 */
export function entryText(e: StoredAudit): string {
  return entryHead(e.id, e.ts, copyText(e.orgId), e.seq) + contentText(e);
}

/** The place columns of the canonical text (id, ts, org_id, seq) and the tab after them; `orgIdText` already escaped. */
export function entryHead(id: string, ts: number, orgIdText: string, seq: number): string {
  return `${copyText(id)}\t${new Date(ts).toISOString()}\t${orgIdText}\t${seq}\t`;
}

/** The rest of the canonical text, from `source` to `details`: what the writer serialises as it queues an entry. */
export function contentText(e: AuditContent): string {
  const values = e as unknown as Record<string, string | number | boolean | null>;
  let text = '';
  for (let i = 0; i < CONTENT_FIELDS.length; i++) {
    const value = values[CONTENT_FIELDS[i]];
    if (i > 0) text += '\t';
    if (value === null) text += '\\N';
    else if (CONTENT_FORMATS[i] === TextFormat.Text) text += copyText(value as string);
    else if (CONTENT_FORMATS[i] === TextFormat.Boolean) text += value ? 't' : 'f';
    else text += String(value);
  }
  return text;
}

const COPY_SPECIAL = /[\\\t\n\r]/g;
/** The same set without the global flag: `test` on it keeps no state between calls. */
const HAS_COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** A text value in COPY text format. */
export function copyText(value: string | null): string {
  if (value === null) return '\\N';
  // Almost no value needs an escape; testing first costs a quarter of an empty replace.
  return HAS_COPY_SPECIAL.test(value) ? value.replace(COPY_SPECIAL, (c) => COPY_ESCAPES[c]) : value;
}

/** The value of a COPY text field (the inverse of `copyText`). */
export function copyValue(field: string): string | null {
  if (field === '\\N') return null;
  return field.includes('\\') ? field.replace(COPY_ESCAPED, (escape) => COPY_UNESCAPES[escape]) : field;
}

const COPY_ESCAPED = /\\[\\tnr]/g;
const COPY_UNESCAPES: Record<string, string> = { '\\\\': '\\', '\\t': '\t', '\\n': '\n', '\\r': '\r' };

// ---- Writing a batch ------------------------------------------------------------------------

/** Writes a batch of canonical lines with their hashes: the cheapest way into PostgreSQL, parsed in C. */
export const COPY_AUDIT_ROWS_SQL = `COPY audit_entries (${AUDIT_COLUMN_LIST}) FROM STDIN`;

/**
 * The same batch as one statement for the embedded database, whose socket server cannot take
 * COPY FROM STDIN: the rows travel as a single JSON parameter (see `jsonRow`). A `json` column
 * of json_to_recordset keeps the text of its value exactly, and so does the `json` column type.
 */
export const INSERT_AUDIT_ROWS_SQL = `INSERT INTO audit_entries (${AUDIT_COLUMN_LIST})
  SELECT ${AUDIT_COLUMN_LIST}
  FROM json_to_recordset($1::json) AS t(${ALL_COLUMNS.map((column) => `${column.column} ${column.type}`).join(', ')})`;

/**
 * The entry as a JSON object for INSERT_AUDIT_ROWS_SQL, its fields read back from the canonical
 * text by column type; payloads are spliced in as their stored text.
 */
export function jsonRow({ text, prevHash, hash }: { text: string; prevHash: string; hash: string }): string {
  const fields = text.split('\t');
  const parts: string[] = [];
  for (let i = 0; i < fields.length; i++) {
    const { column, type } = AUDIT_ENTRY_COLUMNS[i];
    parts.push(`${JSON.stringify(column)}:${jsonValue(copyValue(fields[i]), type)}`);
  }
  return `{${parts.join(',')},"prev_hash":${JSON.stringify(prevHash)},"hash":${JSON.stringify(hash)}}`;
}

function jsonValue(value: string | null, type: AuditColumnType): string {
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

// ---- Reading entries back -------------------------------------------------------------------

/**
 * The select list reading `fields` (all stored columns by default) so that `readAudit` maps the
 * row: each column aliased as its field, payloads as the exact text stored.
 */
export function auditSelectList(fields: readonly AuditField[] = ALL_COLUMNS.map((column) => column.field as AuditField), table = ''): string {
  const prefix = table === '' ? '' : `${table}.`;
  return fields
    .map((field) => {
      const { column, type } = COLUMN_OF_FIELD.get(field)!;
      return `${prefix}${column}${type === 'json' ? '::text' : ''} AS "${field}"`;
    })
    .join(', ');
}

/** A row read with `auditSelectList(fields)` as the entry's fields: times in milliseconds, sequence numbers as numbers. */
export function readAudit<F extends AuditField>(row: Record<string, unknown>, fields: readonly F[]): Pick<ChainedAudit, F> {
  const entry: Record<string, unknown> = {};
  for (const field of fields) {
    const value = row[field];
    const { type } = COLUMN_OF_FIELD.get(field)!;
    if (value === null || value === undefined) entry[field] = null;
    else if (type === 'timestamptz') entry[field] = value instanceof Date ? value.getTime() : Date.parse(String(value));
    else if (type === 'bigint') entry[field] = Number(value);
    else entry[field] = value;
  }
  return entry as Pick<ChainedAudit, F>;
}

/** Every stored field, for `auditSelectList` and `readAudit`. */
export const ALL_AUDIT_FIELDS = ALL_COLUMNS.map((column) => column.field as AuditField);
