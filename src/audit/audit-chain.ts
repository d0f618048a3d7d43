import { hash } from 'node:crypto';

/** prev_hash of an organization's first entry. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * An audit row exactly as stored; both the writer and the verifier hash this shape. Payloads
 * are the JSON text held by the `json` columns, which PostgreSQL keeps byte for byte.
 */
export interface StoredAudit {
  id: string;
  ts: number;
  orgId: string;
  seq: number;
  source: string;
  kind: string;
  traceId: string | null;
  agentId: string | null;
  agentName: string | null;
  trustTier: string | null;
  action: string;
  method: string | null;
  path: string | null;
  decision: string;
  enforced: boolean;
  rateLimited: boolean;
  policyName: string | null;
  rule: string | null;
  reason: string | null;
  decisionLatencyMs: number | null;
  latencyMs: number | null;
  status: number | null;
  upstreamStatus: number | null;
  delegationChain: string | null;
  input: string | null;
  details: string | null;
}

/** An entry's content: every canonical column except the four its chain position sets. */
export type AuditContent = Omit<StoredAudit, 'id' | 'ts' | 'orgId' | 'seq'>;

/**
 * The canonical text of an entry: its content columns, in the order of AUDIT_COLUMNS, as one
 * line of PostgreSQL's COPY text format (tab-separated, `\N` for null, backslash escapes; no
 * newline), payloads as their stored JSON text. It is hashed, and with the two hash columns
 * appended it is also the line the batch COPY sends, so each entry is serialised once; the
 * verifier rebuilds the same text from the columns it reads back. The escapes keep it
 * unambiguous: no value can contain a column boundary or pass for a null.
 */
export function entryText(e: StoredAudit): string {
  return entryHead(e.id, e.ts, copyText(e.orgId), e.seq) + contentText(e);
}

/** The first four columns of the canonical text and the tab after them; `orgIdText` already escaped. */
export function entryHead(id: string, ts: number, orgIdText: string, seq: number): string {
  return `${copyText(id)}\t${new Date(ts).toISOString()}\t${orgIdText}\t${seq}\t`;
}

/** The rest of the canonical text, from `source` to `details`: what the writer serialises as it queues an entry. */
export function contentText(e: AuditContent): string {
  return (
    `${copyText(e.source)}\t${copyText(e.kind)}` +
    `\t${copyText(e.traceId)}\t${copyText(e.agentId)}\t${copyText(e.agentName)}\t${copyText(e.trustTier)}\t${copyText(e.action)}` +
    `\t${copyText(e.method)}\t${copyText(e.path)}\t${copyText(e.decision)}\t${e.enforced ? 't' : 'f'}\t${e.rateLimited ? 't' : 'f'}` +
    `\t${copyText(e.policyName)}\t${copyText(e.rule)}\t${copyText(e.reason)}\t${copyNumber(e.decisionLatencyMs)}\t${copyNumber(e.latencyMs)}` +
    `\t${copyNumber(e.status)}\t${copyNumber(e.upstreamStatus)}\t${copyText(e.delegationChain)}\t${copyText(e.input)}\t${copyText(e.details)}`
  );
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

function copyNumber(value: number | null): string {
  return value === null ? '\\N' : String(value);
}

/** Hash of an entry's canonical text chained to its predecessor's hash (SHA-256, hex). */
export function hashEntryText(prevHash: string, text: string): string {
  return hash('sha256', `${prevHash}\n${text}`, 'hex');
}

/** Hash of an entry chained to its predecessor. */
export function chainHash(prevHash: string, entry: StoredAudit): string {
  return hashEntryText(prevHash, entryText(entry));
}
