import type { PdpAnswer } from './pdp.service';

/** The `/v1/check` answer (docs/pdp.md "What an answer says"), with the PDP's cache hints. */
export function checkAnswer(answer: PdpAnswer): Record<string, unknown> {
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
  return { ...answer, policyVersion: String(answer.policyVersion), cacheTtlMs: String(answer.cacheTtlMs) };
}
