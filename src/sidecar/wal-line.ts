import { AuditRecord, roundMs } from '../audit/audit-record';
import { jsonNumber, jsonString } from '../common/json-text';

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

/** `{"seq":N,...record,"input":<inputJson>}` and a newline. */
export function walLine(seq: number, entry: AuditRecord, inputJson: string): string {
  const id = entry.id === undefined ? '' : `"id":${jsonString(entry.id)},`;
  const details = entry.details === undefined ? '' : `"details":${JSON.stringify(entry.details) ?? 'null'},`;
  const chain = entry.delegationChain === null ? 'null' : JSON.stringify(entry.delegationChain);
  return (
    `{"seq":${seq},${id}"ts":${jsonNumber(entry.ts)},"orgId":${jsonString(entry.orgId)},"source":"${entry.source}","kind":"${entry.kind}",` +
    `"traceId":${jsonString(entry.traceId)},"agentId":${jsonString(entry.agentId)},"agentName":${jsonString(entry.agentName)},"trustTier":${jsonString(entry.trustTier)},` +
    `"action":${jsonString(entry.action)},"method":${jsonString(entry.method)},"path":${jsonString(entry.path)},"decision":"${entry.decision}",` +
    `"enforced":${entry.enforced},"rateLimited":${entry.rateLimited},"policyName":${jsonString(entry.policyName)},"rule":${jsonString(entry.rule)},` +
    `"reason":${jsonString(entry.reason)},"decisionLatencyMs":${jsonNumber(roundMs(entry.decisionLatencyMs))},"latencyMs":${jsonNumber(roundMs(entry.latencyMs))},` +
    `"status":${jsonNumber(entry.status)},"upstreamStatus":${jsonNumber(entry.upstreamStatus)},"delegationChain":${chain},${details}"input":${inputJson}}\n`
  );
}
