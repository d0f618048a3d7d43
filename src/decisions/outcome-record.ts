import type { AuditRecord } from './audit-record';
import { newId } from '../common/ids';
import { resolveTraceId } from '../common/trace-id';
import type { AgentSnapshot } from './decision-sources';
import { decisionIdAt } from './decision-id';
import type { LinkedDecision } from './decision-links';

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
    id: newId('aud'),
    ts,
    orgId: agent.orgId,
    source: 'check',
    kind: 'outcome',
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
    reason: event.resultSummary ?? null,
    decisionLatencyMs: null,
    latencyMs: event.durationMs,
    status: null,
    upstreamStatus: null,
    delegationChain: null,
    input: { plugin: event.plugin, function: event.function, args: event.arguments ?? {} },
    details: { eventId: event.eventId ?? null, decisionId: event.decisionId ?? null, durationMs: event.durationMs, resultSummary: event.resultSummary ?? null },
  };
}

/**
 * A decision the SDK applied from its cache (`cached: true`), as a decision entry of its own
 * (source `check`) stamped `ts`: allow or deny as applied, naming the policy, rule and reason of
 * the decision it reused (`details.decisionId`), so every application of a cached denial is on
 * the trail. Its id has the decision form, so an outcome may name it.
 */
export function cachedDecisionRecord(agent: AgentSnapshot, event: ReportedCall, reused: LinkedDecision, traceId: string, ts: number): AuditRecord & { id: string } {
  return {
    id: decisionIdAt(ts),
    ts,
    orgId: agent.orgId,
    source: 'check',
    kind: 'decision',
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
    policyName: reused.policyName,
    rule: reused.rule,
    reason: reused.reason,
    decisionLatencyMs: null,
    latencyMs: null,
    status: null,
    upstreamStatus: null,
    delegationChain: null,
    input: { plugin: event.plugin, function: event.function, args: event.arguments ?? {} },
    details: { cached: true, decisionId: event.decisionId ?? null, eventId: event.eventId ?? null, durationMs: event.durationMs, resultSummary: event.resultSummary ?? null },
  };
}

function eventTraceId(event: ReportedCall, traceId: string): string {
  return event.traceId !== undefined && resolveTraceId(event.traceId, undefined) === event.traceId ? event.traceId : traceId;
}
