import { compactInput } from './audit-input';
import type { AuditSanitizer } from './audit-sanitizer';

/** Where an audit entry came from. */
export type AuditSource = 'proxy' | 'pdp' | 'adapter' | 'sidecar' | 'admin';

/** `decision`: a policy decision; `admin`: a change made through the admin API or CLI. */
export type AuditKind = 'decision' | 'admin';

/**
 * What callers hand to the AuditWriter. Plain data, built once per request; the writer cleans
 * and redacts it as it is queued (`queuedAudit`), then assigns id, sequence and hashes off the
 * request path.
 */
export interface AuditRecord {
  /** Milliseconds since the epoch. */
  ts: number;
  orgId: string;
  source: AuditSource;
  kind: AuditKind;
  traceId: string | null;
  agentId: string | null;
  agentName: string | null;
  trustTier: string | null;
  action: string;
  method: string | null;
  /** Path without its query string: query values are arguments and get redacted there. */
  path: string | null;
  decision: 'allow' | 'deny';
  /** False when MODE=audit let a would-be denial through. */
  enforced: boolean;
  rateLimited: boolean;
  policyName: string | null;
  rule: string | null;
  reason: string | null;
  /** Time spent deciding. */
  decisionLatencyMs: number | null;
  /** Time of the whole request, as the gateway saw it. */
  latencyMs: number | null;
  /** Status the caller received. */
  status: number | null;
  /** Status the upstream answered, when the request was forwarded. */
  upstreamStatus: number | null;
  delegationChain: readonly string[] | null;
  /** The decision input (redacted before storage); kept so backtests can replay it. */
  input: unknown;
  /** Admin changes: actor, previous and new values. */
  details: unknown;
}

/**
 * A record as the AuditWriter queues it and hands it to the sink: cleaned (texts bounded and
 * storable, see AuditSanitizer) and its payloads compacted, redacted and serialised to the JSON
 * text they are stored as. Doing this at `record` time keeps the request's object graph out of
 * the queue and makes a batch a flat list of strings and numbers, which the audit worker
 * receives for a third of the cost of the objects.
 */
export interface QueuedAudit extends Omit<AuditRecord, 'delegationChain' | 'input' | 'details'> {
  delegationChain: string | null;
  input: string | null;
  details: string | null;
}

/** The queued form of `record`, cleaned by `clean`. */
export function queuedAudit(record: AuditRecord, clean: AuditSanitizer): QueuedAudit {
  return {
    ts: record.ts,
    orgId: record.orgId,
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
    decisionLatencyMs: record.decisionLatencyMs,
    latencyMs: record.latencyMs,
    status: record.status,
    upstreamStatus: record.upstreamStatus,
    delegationChain: clean.serialize(record.delegationChain),
    input: clean.serialize(compactInput(record.input)),
    details: clean.serialize(record.details),
  };
}
