import type { AuditRecord } from '../audit-record/audit-record';
import { newId } from '../common/ids';
import { resolveTraceId } from '../common/trace-id';
import type { AgentSnapshot } from '../decision/decision-sources';
import { decisionIdAt } from '../decision/decision-id';
import type { LinkedDecision } from '../decision/decision-links';

/** What an adapter reports of a call it checked (`POST /v1/audit`). */
export interface ReportedCall {
  plugin: string;
  function: string;
  arguments?: Record<string, unknown>;
  decision: 'allow' | 'deny';
  durationMs: number;
  resultSummary?: string;
  traceId?: string;
  eventId?: string;
  decisionId?: string;
  /** The SDK applied the decision `decisionId` names from its cache. */
  cached?: boolean;
}

/** An adapter's `/v1/audit` event as its audit entry (kind `outcome`) stamped `ts` (when the call happened), on the gateway and at the edge alike. */
export function outcomeRecord(agent: AgentSnapshot, event: ReportedCall, traceId: string, ts: number): AuditRecord & { id: string } {
  return {
    ...reportedCallRecord(agent, event, traceId, ts),
    id: newId('aud'),
    kind: 'outcome',
    reason: event.resultSummary ?? null,
    latencyMs: event.durationMs,
    details: { eventId: event.eventId ?? null, decisionId: event.decisionId ?? null, durationMs: event.durationMs, resultSummary: event.resultSummary ?? null },
  };
}

/** The details of a cached decision's entry (cachedDecisionRecord). */
export interface CachedDecisionDetails {
  cached: true;
  decisionId: string | null;
  eventId: string | null;
  durationMs: number;
  resultSummary: string | null;
}

const MAX_FORWARDED_ID = 128;
const MAX_FORWARDED_SUMMARY = 2048;
const MAX_FORWARDED_DURATION_MS = 86_400_000;

/**
 * The details of a cached decision's entry as a sidecar forwards it, each field only when well
 * formed and within what `POST /v1/audit` takes; null when they do not say `cached: true`, so the
 * entry is an ordinary decision's.
 */
export function forwardedCachedDetails(details: unknown): CachedDecisionDetails | null {
  if (typeof details !== 'object' || details === null || (details as { cached?: unknown }).cached !== true) return null;
  const { decisionId, eventId, durationMs, resultSummary } = details as Record<string, unknown>;
  const text = (value: unknown, max: number) => (typeof value === 'string' && value.length <= max ? value : null);
  const duration = typeof durationMs === 'number' && Number.isFinite(durationMs) ? Math.min(Math.max(durationMs, 0), MAX_FORWARDED_DURATION_MS) : 0;
  return { cached: true, decisionId: text(decisionId, MAX_FORWARDED_ID), eventId: text(eventId, MAX_FORWARDED_ID), durationMs: duration, resultSummary: text(resultSummary, MAX_FORWARDED_SUMMARY) };
}

/**
 * A decision the SDK applied from its cache (`cached: true`), as a decision entry of its own
 * (source `check`) stamped `ts`: allow or deny as applied, naming the policy, rule and reason of
 * the decision it reused (`details.decisionId`), so every application of a cached denial is on
 * the trail. Its id has the decision form, so an outcome may name it.
 */
export function cachedDecisionRecord(agent: AgentSnapshot, event: ReportedCall, reused: LinkedDecision, traceId: string, ts: number): AuditRecord & { id: string } {
  return {
    ...reportedCallRecord(agent, event, traceId, ts),
    id: decisionIdAt(ts),
    kind: 'decision',
    policyName: reused.policyName,
    rule: reused.rule,
    reason: reused.reason,
    latencyMs: null,
    details: { cached: true, decisionId: event.decisionId ?? null, eventId: event.eventId ?? null, durationMs: event.durationMs, resultSummary: event.resultSummary ?? null } satisfies CachedDecisionDetails,
  };
}

/** What both entries of a reported call say alike: who, the call, and the decision as applied. */
function reportedCallRecord(agent: AgentSnapshot, event: ReportedCall, traceId: string, ts: number): Omit<AuditRecord, 'kind' | 'latencyMs' | 'details'> {
  return {
    ts,
    orgId: agent.orgId,
    source: 'check',
    traceId: eventTraceId(event, traceId),
    agentId: agent.id,
    agentName: agent.name,
    trustTier: agent.trustTier,
    action: `${event.plugin}.${event.function}`,
    method: null,
    path: null,
    decision: event.decision,
    enforced: true,
    rateLimited: false,
    policyName: null,
    rule: null,
    reason: null,
    decisionLatencyMs: null,
    status: null,
    upstreamStatus: null,
    delegationChain: null,
    input: { plugin: event.plugin, function: event.function, args: event.arguments ?? {} },
  };
}

function eventTraceId(event: ReportedCall, traceId: string): string {
  return event.traceId !== undefined && resolveTraceId(event.traceId, undefined) === event.traceId ? event.traceId : traceId;
}
