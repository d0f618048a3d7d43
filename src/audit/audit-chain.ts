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

/**
 * The canonical text of an entry: a JSON object of every stored field, in this fixed key
 * order, with the payloads' stored JSON text spliced in as it is. It is hashed, and (with the
 * two hash fields appended) it is also the row the batch insert sends, so each entry is
 * serialised once; the verifier rebuilds the same text from the columns it reads back.
 */
export function entryText(entry: StoredAudit): string {
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
  });
  return `${scalars.slice(0, -1)},"delegation_chain":${entry.delegationChain ?? 'null'},"input":${entry.input ?? 'null'},"details":${entry.details ?? 'null'}}`;
}

/** Hash of an entry's canonical text chained to its predecessor's hash (SHA-256, hex). */
export function hashEntryText(prevHash: string, text: string): string {
  return hash('sha256', `${prevHash}\n${text}`, 'hex');
}

/** Hash of an entry chained to its predecessor. */
export function chainHash(prevHash: string, entry: StoredAudit): string {
  return hashEntryText(prevHash, entryText(entry));
}
