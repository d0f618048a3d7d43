import type { AuditRecord } from './audit-record';
import { newId } from '../common/ids';
import { resolveTraceId } from '../common/trace-id';
import type { AgentSnapshot } from './decision-sources';

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
}

/** An adapter's `/v1/audit` event as its audit entry (kind `outcome`), on the gateway and at the edge alike. */
export function outcomeRecord(agent: AgentSnapshot, event: ReportedCall, traceId: string): AuditRecord & { id: string } {
  return {
    id: newId('aud'),
    ts: Date.now(),
    orgId: agent.orgId,
    source: 'check',
    kind: 'outcome',
    traceId: event.traceId !== undefined && resolveTraceId(event.traceId, undefined) === event.traceId ? event.traceId : traceId,
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
