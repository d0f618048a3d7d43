import type { CompiledPolicy, CompiledRule } from './compiled-policy';
import type { Decision, DecisionInput, Explanation, PolicyTrace, RateLimitTrip, RuleTrace } from './types';

/**
 * Hooks an evaluation calls as it goes (like OPA's QueryTracer): the enforcing loop itself
 * reports what it does, so explanation and simulation cannot drift from enforcement.
 */
export interface EvaluationTracer {
  /** A policy applies and its rules are about to be tried, in order. */
  policyEntered(policy: CompiledPolicy): void;
  /** A rule's condition was evaluated; `rateLimit` is the limit it consulted, if any (its trip, else a zero wait). */
  ruleEvaluated(rule: CompiledRule, fired: boolean, rateLimit: RateLimitTrip | undefined): void;
}

/** Builds the `Explanation` of one evaluation: every policy of the set, every rule of an applicable one. */
export class ExplanationTracer implements EvaluationTracer {
  private readonly tried = new Map<CompiledPolicy, RuleTrace[]>();
  private current: RuleTrace[] = [];

  constructor(
    private readonly policies: readonly CompiledPolicy[],
    private readonly input: DecisionInput,
  ) {}

  policyEntered(policy: CompiledPolicy): void {
    this.current = [];
    this.tried.set(policy, this.current);
  }

  ruleEvaluated(rule: CompiledRule, fired: boolean, rateLimit: RateLimitTrip | undefined): void {
    this.current.push({ rule: rule.label, action: rule.effect, result: fired, ...(rateLimit === undefined ? {} : { rateLimit }) });
  }

  /** The explanation once the evaluation decided: what it did not reach is marked `not-reached`. */
  explanation(decision: Decision): Explanation {
    return { decision, trace: this.policies.map((policy) => this.policyTrace(policy)) };
  }

  // The evaluation stops at the deciding deny, so a policy it never entered either does not
  // apply or comes after the decision.
  private policyTrace(policy: CompiledPolicy): PolicyTrace {
    const tried = this.tried.get(policy);
    const applicable = tried !== undefined || policy.matches(this.input);
    if (!applicable) return { policy: policy.name, applicable, rules: [] };
    const done = tried ?? [];
    return { policy: policy.name, applicable, rules: [...done, ...policy.rules.slice(done.length).map(notReached)] };
  }
}

function notReached(rule: CompiledRule): RuleTrace {
  return { rule: rule.label, action: rule.effect, result: 'not-reached' };
}
