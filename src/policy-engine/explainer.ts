import type { CompiledPolicy, CompiledRule } from './compiled-policy';
import { RateLimitRecorder } from './rate-limit-call';
import type { Decision, DecisionInput, EvaluationEnv, Explanation, PolicyTrace, RuleTrace } from './types';

/** Simulates PolicySet.evaluate over all policies (limits peeked), recording what every rule did. */
export function explainPolicies(
  policies: readonly CompiledPolicy[],
  defaultDecision: Decision,
  input: DecisionInput,
  env: EvaluationEnv,
): Explanation | Promise<Explanation> {
  return new Simulation(policies, defaultDecision, input, env).continueAt(0, 0);
}

// Slow path by design: clarity over speed, since explain serves admins, not traffic.
class Simulation {
  private readonly trace: PolicyTrace[];
  private decided: Decision | null = null;
  private allowed: Decision | null = null;
  private first: CompiledPolicy | null = null;
  private policyAllowed = false;

  constructor(
    private readonly policies: readonly CompiledPolicy[],
    private readonly defaultDecision: Decision,
    private readonly input: DecisionInput,
    private readonly env: EvaluationEnv,
  ) {
    this.trace = policies.map((policy) => ({ policy: policy.name, applicable: policy.matches(input), rules: [] }));
  }

  continueAt(policyIndex: number, ruleIndex: number): Explanation | Promise<Explanation> {
    for (let p = policyIndex; p < this.policies.length; p++) {
      if (!this.trace[p].applicable) continue;
      const policy = this.policies[p];
      if (ruleIndex === 0) this.enterPolicy(policy);
      for (let r = ruleIndex; r < policy.rules.length; r++) {
        const pending = this.tryRule(p, policy.rules[r]);
        if (pending !== undefined) return pending.then(() => this.continueAt(p, r + 1));
      }
      ruleIndex = 0;
      this.leavePolicy(policy);
    }
    return { decision: this.finalDecision(), trace: this.trace };
  }

  private enterPolicy(policy: CompiledPolicy): void {
    if (this.first === null) this.first = policy;
    this.policyAllowed = false;
  }

  private leavePolicy(policy: CompiledPolicy): void {
    if (this.decided === null && policy.defaultDeny && !this.policyAllowed) this.decided = policy.defaultDecision;
  }

  /** Records the rule's outcome; returns a promise when the limiter answered asynchronously. */
  private tryRule(policyIndex: number, rule: CompiledRule): Promise<void> | undefined {
    const rules = this.trace[policyIndex].rules;
    if (this.decided !== null) {
      rules.push({ rule: rule.label, action: rule.effect, result: 'not-reached' });
      return undefined;
    }
    if (rule.sync !== null) {
      this.settle(rules, rule, rule.sync(this.input), undefined);
      return undefined;
    }
    const recorder = new RateLimitRecorder(this.env, true);
    const answer = (rule.rated as NonNullable<CompiledRule['rated']>)(this.input, recorder);
    if (typeof answer === 'boolean') {
      this.settle(rules, rule, answer, recorder);
      return undefined;
    }
    return answer.then((value) => this.settle(rules, rule, value, recorder));
  }

  private settle(rules: RuleTrace[], rule: CompiledRule, fired: boolean, recorder: RateLimitRecorder | undefined): void {
    const consulted = recorder?.consultation();
    rules.push({ rule: rule.label, action: rule.effect, result: fired, ...(consulted === undefined ? {} : { rateLimit: consulted }) });
    if (!fired) return;
    if (rule.effect === 'deny') {
      const trip = recorder?.trip();
      this.decided = trip === undefined ? rule.decision : { ...rule.decision, rateLimit: trip };
      return;
    }
    if (!this.policyAllowed && this.allowed === null) this.allowed = rule.decision;
    this.policyAllowed = true;
  }

  private finalDecision(): Decision {
    if (this.decided !== null) return this.decided;
    if (this.allowed !== null) return this.allowed;
    return this.first === null ? this.defaultDecision : this.first.allowDecision;
  }
}
