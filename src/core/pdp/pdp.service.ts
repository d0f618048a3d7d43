import { Inject, Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { resolveTraceId } from '../common/trace-id';
import { AGENT_SOURCE, AgentSource } from '../decision/decision-sources';
import { DecisionService, DecisionSource, Verdict } from '../decision/decision.service';
import { DIRECT, Principal } from '../decision/agent-authenticator';
import { limitError, outcomeOf, statusOf } from '../decision/verdict-answer';
import type { PdpRequest } from './pdp-request';

/** How long an SDK may reuse a cacheable decision; a Subscribe event for the organization ends it sooner. */
export const DECISION_CACHE_TTL_MS = 30_000;

/** A PDP answer in the field names of PolicyResponse (its proto3 JSON form). */
export interface PdpAnswer {
  decision: 'DECISION_ALLOW' | 'DECISION_DENY' | 'DECISION_PENDING';
  reason: string;
  policy: string;
  rule: string;
  policyVersion: number;
  traceId: string;
  latencyMs: number;
  decisionId: string;
  cacheable: boolean;
  cacheTtlMs: number;
  enforced: boolean;
  /** With DECISION_PENDING: the approval opened for the request ('' otherwise). */
  approvalId: string;
  approvalExpiresAt: string;
}

/**
 * The PDP's one translation: a PdpRequest from any transport (gRPC Evaluate and EvaluateStream,
 * the HTTP fallback, `/v1/check`) becomes a governed decision for the named agent of the
 * caller's organization, decided and recorded by DecisionService like a proxied request.
 */
@Injectable()
export class PdpService {
  constructor(
    private readonly decisions: DecisionService,
    @Inject(AGENT_SOURCE) private readonly agents: AgentSource,
  ) {}

  /**
   * Decides and records. Throws AppError for an unknown or revoked agent, a used-up quota, and
   * a tripped rate limit or spent budget (recorded first: like the proxy's 429 it is not a
   * denial the caller should cache but a "try again later", RESOURCE_EXHAUSTED on gRPC).
   */
  async evaluate(orgId: string, request: PdpRequest, source: DecisionSource): Promise<PdpAnswer> {
    return (await this.answer(orgId, request, source)).answer;
  }

  /** As `evaluate`, with the HTTP status the answer goes with (verdict-answer.ts: 202 for a held call, else 200). */
  async answer(orgId: string, request: PdpRequest, source: DecisionSource): Promise<{ status: number; answer: PdpAnswer }> {
    const principal = await this.principal(orgId, request.agentId);
    const context = request.trustTier === '' ? request.context : { ...request.context, adapter_trust_tier: request.trustTier };
    // A caller naming both its function and an action is decided on both (docs/security.md).
    const derivedAction = request.plugin !== '' && request.function !== '' ? `${request.plugin}.${request.function}` : undefined;
    const verdict = await this.decisions.check(principal, {
      source,
      traceId: resolveTraceId(request.traceId === '' ? undefined : request.traceId, undefined),
      action: request.action !== '' ? request.action : derivedAction!,
      derivedAction,
      resource: request.resource,
      plugin: request.plugin,
      function: request.function,
      args: request.args,
      context,
      approvalId: request.approvalId === '' ? undefined : request.approvalId,
      sessionId: request.sessionId === '' ? undefined : request.sessionId,
    });
    const outcome = outcomeOf(verdict);
    if (outcome.kind === 'limited') throw limitError(verdict, outcome);
    return { status: statusOf(outcome, 'reporting'), answer: answerOf(verdict) };
  }

  /** The agent a PDP call is for: it must exist in the caller's organization and not be revoked. */
  private async principal(orgId: string, agentId: string): Promise<Principal> {
    const agent = await this.agents.get(agentId);
    // Another organization's agent is reported as unknown: ids must not be probed across tenants.
    if (agent === null || agent.orgId !== orgId) throw AppError.notFound('agent', agentId);
    if (agent.revoked) throw new AppError(ErrorCode.Forbidden, `agent ${agentId} is revoked`);
    return { agent, delegation: DIRECT };
  }
}

function answerOf(verdict: Verdict): PdpAnswer {
  const { decision } = verdict;
  const allowed = decision.effect === 'allow' || !verdict.enforced;
  return {
    decision: verdict.pending !== undefined ? 'DECISION_PENDING' : allowed ? 'DECISION_ALLOW' : 'DECISION_DENY',
    reason: decision.reason,
    policy: decision.policy,
    rule: decision.rule ?? '',
    policyVersion: verdict.policyVersion,
    traceId: verdict.request.traceId,
    latencyMs: Math.round(verdict.decisionMs * 1000) / 1000,
    decisionId: verdict.id,
    cacheable: verdict.cacheable,
    cacheTtlMs: verdict.cacheable ? DECISION_CACHE_TTL_MS : 0,
    enforced: verdict.enforced,
    approvalId: verdict.pending?.approvalId ?? '',
    approvalExpiresAt: verdict.pending?.expiresAt ?? '',
  };
}
