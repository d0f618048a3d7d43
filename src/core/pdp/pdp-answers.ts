import type { PdpAnswer } from './pdp.service';

/** The `/v1/check` answer (docs/pdp.md "What an answer says"), with the PDP's cache hints. */
export function checkAnswer(answer: PdpAnswer): Record<string, unknown> {
  if (answer.decision === 'DECISION_PENDING') return { ...pendingFields(answer), decision: 'pending', policy: answer.policy, rule: answer.rule, reason: answer.reason, traceId: answer.traceId, decisionId: answer.decisionId };
  return {
    decision: answer.decision === 'DECISION_ALLOW' ? 'allow' : 'deny',
    reason: answer.reason,
    policy: answer.policy,
    rule: answer.rule === '' ? undefined : answer.rule,
    traceId: answer.traceId,
    policyVersion: answer.policyVersion,
    latencyMs: answer.latencyMs,
    decisionId: answer.decisionId,
    enforced: answer.enforced,
    cacheable: answer.cacheable,
    cacheTtlMs: answer.cacheTtlMs,
  };
}

/** PolicyResponse in proto3 JSON: camelCase names, the enum by name, int64 fields as strings. */
export function protoJsonAnswer(answer: PdpAnswer): Record<string, unknown> {
  const json = { ...answer, policyVersion: String(answer.policyVersion), cacheTtlMs: String(answer.cacheTtlMs) };
  return answer.decision === 'DECISION_PENDING' ? { ...pendingFields(answer), ...json } : json;
}

/** What every transport answers for a request a `require_approval` rule holds (docs/approvals.md): HTTP 202. */
export function pendingFields(answer: Pick<PdpAnswer, 'approvalId' | 'approvalExpiresAt' | 'reason' | 'policy'>): Record<string, unknown> {
  return {
    error: 'approval_required',
    approvalId: answer.approvalId,
    expiresAt: answer.approvalExpiresAt,
    message: `Waiting for a person's approval (${answer.policy}: ${answer.reason}); retry with approval id ${answer.approvalId} once approved`,
  };
}
