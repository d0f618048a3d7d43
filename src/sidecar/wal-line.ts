import { AuditRecord, roundMs } from '../core/audit-record/audit-record';
import type { AuditSanitizer } from '../core/audit-record/audit-sanitizer';
import { jsonNumber, jsonString } from '../core/common/json-text';

/*
 * The JSON text of a write-ahead line, written field by field: one JSON.stringify of the whole
 * record was the largest cost of an /enforce request after the HTTP layer (V8 walks every key
 * and escapes every string), while nearly all of its values are short plain strings, numbers
 * and booleans that need no escaping. The output parses to what JSON.stringify would give
 * (wal-line.spec.ts), with the latencies already rounded to the microsecond as the gateway
 * stores them (shorter to print, nothing lost that the gateway keeps). `source`, `kind` and
 * `decision` are enumerations: plain words, written as they are.
 */

/** The record's fields this encoder writes; `input` comes already cleaned and serialised. */
type EncodedField =
  | 'id'
  | 'ts'
  | 'orgId'
  | 'source'
  | 'kind'
  | 'traceId'
  | 'agentId'
  | 'agentName'
  | 'trustTier'
  | 'action'
  | 'method'
  | 'path'
  | 'decision'
  | 'enforced'
  | 'rateLimited'
  | 'policyName'
  | 'rule'
  | 'reason'
  | 'decisionLatencyMs'
  | 'latencyMs'
  | 'status'
  | 'upstreamStatus'
  | 'delegationChain'
  | 'details';
/** A field added to AuditRecord and not written here fails the build rather than vanish from the sidecar's entries. */
const everyFieldEncoded: Record<Exclude<keyof AuditRecord, EncodedField | 'input'>, never> = {};
void everyFieldEncoded;

/**
 * `{"seq":N,...record,"input":<inputJson>}` and a newline, its texts cleaned by `clean` as the
 * gateway cleans the texts it stores (bounded, no NUL, no lone surrogate): the gateway's ingest
 * must take every line (it refuses an action over 64 KiB, for one), or forwarding stops at it.
 */
export function walLine(seq: number, entry: AuditRecord, inputJson: string, clean: AuditSanitizer): string {
  const id = entry.id === undefined ? '' : `"id":${jsonString(entry.id)},`;
  const details = entry.details === undefined ? '' : `"details":${clean.serialize(entry.details) ?? 'null'},`;
  const chain = entry.delegationChain === null ? 'null' : JSON.stringify(entry.delegationChain);
  return (
    `{"seq":${seq},${id}"ts":${jsonNumber(entry.ts)},"orgId":${text(clean, entry.orgId)},"source":"${entry.source}","kind":"${entry.kind}",` +
    `"traceId":${text(clean, entry.traceId)},"agentId":${text(clean, entry.agentId)},"agentName":${text(clean, entry.agentName)},"trustTier":${text(clean, entry.trustTier)},` +
    `"action":${text(clean, entry.action)},"method":${text(clean, entry.method)},"path":${text(clean, entry.path)},"decision":"${entry.decision}",` +
    `"enforced":${entry.enforced},"rateLimited":${entry.rateLimited},"policyName":${text(clean, entry.policyName)},"rule":${text(clean, entry.rule)},` +
    `"reason":${text(clean, entry.reason)},"decisionLatencyMs":${jsonNumber(roundMs(entry.decisionLatencyMs))},"latencyMs":${jsonNumber(roundMs(entry.latencyMs))},` +
    `"status":${jsonNumber(entry.status)},"upstreamStatus":${jsonNumber(entry.upstreamStatus)},"delegationChain":${chain},${details}"input":${inputJson}}\n`
  );
}

function text(clean: AuditSanitizer, value: string | null): string {
  return jsonString(clean.text(value));
}
