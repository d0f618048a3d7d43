/** What an outcome is checked against: the decision it names. */
export interface LinkedDecision {
  orgId: string;
  agentId: string;
  plugin: string;
  function: string;
  /** False when the decision denied the call and the denial was enforced. */
  allowed: boolean;
  /** What the decision named, repeated by a cached application of it (`cached: true`). */
  policyName: string | null;
  rule: string | null;
  reason: string | null;
}

/** What an adapter reports with `POST /v1/audit`. */
export interface ReportedOutcome {
  agentId: string;
  plugin: string;
  function: string;
  decision: 'allow' | 'deny';
}

/**
 * Why an outcome may not be linked to the decision its `decisionId` names, else undefined: the
 * decision must exist in the caller's organization, be for the same agent, plugin and function,
 * and a call that was denied cannot have run under an allow (docs/security.md).
 */
export function linkProblem(decisionId: string, orgId: string, decision: LinkedDecision | null, outcome: ReportedOutcome): string | undefined {
  if (decision === null || decision.orgId !== orgId) return `decisionId ${decisionId} names no decision of this organization`;
  if (decision.agentId !== outcome.agentId) return `decisionId ${decisionId} is a decision for agent ${decision.agentId}, not ${outcome.agentId}`;
  if (decision.plugin !== outcome.plugin || decision.function !== outcome.function) {
    return `decisionId ${decisionId} is a decision on ${decision.plugin}.${decision.function}, not ${outcome.plugin}.${outcome.function}`;
  }
  if (!decision.allowed && outcome.decision === 'allow') return `decisionId ${decisionId} denied the call: its outcome cannot be allow`;
  return undefined;
}
