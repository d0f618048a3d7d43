/** Where an audit entry came from. */
export type AuditSource = 'proxy' | 'pdp' | 'adapter' | 'sidecar' | 'admin';

/** `decision`: a policy decision; `admin`: a change made through the admin API or CLI. */
export type AuditKind = 'decision' | 'admin';

/**
 * What callers hand to the AuditWriter. Plain data, built once per request; the writer assigns
 * id, sequence and hashes, and redacts `input` off the request path.
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
