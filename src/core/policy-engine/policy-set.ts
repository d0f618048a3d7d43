import { BudgetSite, CompiledPolicy, CompiledRule, decision } from './compiled-policy';
import { EvaluationTracer, ExplanationTracer } from './evaluation-tracer';
import { peekingLimiter, RateLimitRecorder, RateTest } from './rate-limit-call';
import { peekingLedger } from './budget-call';
import type { Decision, DecisionInput, EvaluationEnv, Explanation, FiredAlert, LabelGrant, MatchTarget, ShadowDecision } from './types';

// Plugin names come from requests; past this many distinct names, candidates are computed uncached.
const MAX_CACHED_PLUGINS = 1024;

/** An evaluation suspended on a limiter's Promise, and where it picks up again. */
interface Suspended {
  readonly input: DecisionInput;
  readonly env: EvaluationEnv;
  readonly list: readonly CompiledPolicy[];
  readonly filter: boolean;
  readonly tracer: EvaluationTracer | undefined;
  readonly policy: number;
  readonly rule: number;
  readonly allowed: Decision | null;
  /** The first `require_approval` rule that fired: it decides unless a deny follows. */
  readonly held: Decision | null;
  /** Every hold that fired, once a second one did. */
  readonly holds: Decision[] | null;
  readonly first: CompiledPolicy | null;
  readonly policyAllowed: boolean;
  readonly alerts: FiredAlert[] | null;
  readonly grants: LabelGrant[] | null;
}

/**
 * An ordered, compiled set of policies, combined deny-overrides: the first deny (in policy then
 * rule order) decides; else the first `require_approval` rule that fired (a hold: every rule is
 * still evaluated, so that no approval ever lifts a deny, docs/security.md); otherwise allow. `alert` rules reached before the decision add their
 * alert to it (`decision.alerts`) and never change it.
 */
export class PolicySet {
  /** The decision when no policy applies. */
  readonly defaultDecision: Decision = decision('allow', 'default', null, 'allowed: no policy applies');
  readonly usesRateLimit: boolean;
  /** The policies in force, in order: those `evaluate` decides on. */
  readonly policies: readonly CompiledPolicy[];
  /** `mode: shadow` policies: never part of the decision, each evaluated apart by `shadowDecisions`. */
  readonly shadowPolicies: readonly CompiledPolicy[];
  /** Some policy reads or adds what sessions remember: decisions need the session's facts. */
  readonly usesSession: boolean;
  /** Some policy reserves budgets: evaluations collect holds for the outcome to settle. */
  readonly usesBudget: boolean;
  private readonly byName: ReadonlyMap<string, CompiledPolicy>;
  private readonly budgetsByPrefix: ReadonlyMap<string, BudgetSite>;
  /** Labels some `label` rule puts on the agent, with the longest ttl any gives them. */
  private readonly agentLabelTtls: ReadonlyMap<string, number>;
  /** Policies whose plugin glob accepts a plugin name: most policies select on the plugin, so this prunes early. */
  private readonly candidatesByPlugin = new Map<string, readonly CompiledPolicy[]>();

  constructor(
    compiled: readonly CompiledPolicy[],
    /** Organization id the rate-limit keys are prefixed with. */
    readonly namespace?: string,
  ) {
    this.policies = compiled.filter((policy) => !policy.shadow);
    this.shadowPolicies = compiled.filter((policy) => policy.shadow);
    this.usesRateLimit = this.policies.some((policy) => policy.usesRateLimit);
    this.usesSession = this.policies.some((policy) => policy.usesSession);
    this.usesBudget = this.policies.some((policy) => policy.usesBudget);
    this.byName = new Map(this.policies.map((policy) => [policy.name, policy]));
    const ttls = new Map<string, number>();
    for (const rule of this.policies.flatMap((policy) => policy.rules)) {
      if (rule.grant?.scope !== 'agent') continue;
      for (const label of rule.grant.labels) ttls.set(label, Math.max(ttls.get(label) ?? 0, rule.grant.ttlMs));
    }
    this.agentLabelTtls = ttls;
    this.budgetsByPrefix = new Map(this.policies.flatMap((policy) => policy.budgetSites.map((site) => [site.prefix, site] as const)));
  }

  /** How long a `label` rule puts `label` on the agent (the longest, if several do), ms; undefined when none does (a session label). */
  agentLabelTtl(label: string): number | undefined {
    return this.agentLabelTtls.get(label);
  }

  /**
   * The budget whose totals a key belongs to (a key is its site's prefix, then its partition),
   * among the policies in force; undefined when none does (a policy changed or removed).
   */
  budgetOf(key: string): BudgetSite | undefined {
    // The prefix's parts are URI-encoded (budgetKeyPrefix), so it ends at the key's sixth `:`; a per_session partition holds another.
    let end = -1;
    for (let i = 0; i < 6; i++) {
      end = key.indexOf(':', end + 1);
      if (end < 0) return undefined;
    }
    return this.budgetsByPrefix.get(key.slice(0, end + 1));
  }

  /**
   * What each shadow policy whose `match` accepts the input would have decided on its own, in
   * order; empty when none applies. Rate limits are peeked, never counted: a shadow policy
   * spends no one's budget.
   */
  shadowDecisions(input: DecisionInput, env: EvaluationEnv): ShadowDecision[] | Promise<ShadowDecision[]> {
    const peeking = dryRunOf(env);
    const decided: Array<ShadowDecision | Promise<ShadowDecision>> = [];
    for (const policy of this.shadowPolicies) {
      if (!policy.matches(input)) continue;
      const outcome = this.run(input, peeking, [policy], false, undefined, null);
      decided.push(outcome instanceof Promise ? outcome.then(shadowDecision) : shadowDecision(outcome));
    }
    return decided.some((item) => item instanceof Promise) ? Promise.all(decided) : (decided as ShadowDecision[]);
  }

  /** The policy in force of that name, if the set has it. */
  get(name: string): CompiledPolicy | undefined {
    return this.byName.get(name);
  }

  /** Policies whose `match` globs all accept the target, in order. */
  applicable(target: MatchTarget): CompiledPolicy[] {
    return this.candidatesFor(target.plugin).filter((policy) => policy.matchesRest === null || policy.matchesRest(target));
  }

  /** True when any of these policies reads `args` at all. */
  readsArgs(applicable: readonly CompiledPolicy[]): boolean {
    return applicable.some((policy) => policy.argNames.size > 0);
  }

  /** True when any of these policies reads an arg other than `path` and `method` (so the JSON body is needed). */
  readsBodyArgs(applicable: readonly CompiledPolicy[]): boolean {
    return applicable.some((policy) => policy.readsBodyArgs);
  }

  /**
   * Decides. Synchronous (and allocation-free unless a rate limit trips) while the limiter answers
   * with numbers; returns a Promise only once a limiter call does. Pass `applicable` when already
   * computed for the same input; otherwise matching happens inline. A `tracer` hears every policy
   * entered and every rule evaluated.
   */
  evaluate(input: DecisionInput, env: EvaluationEnv, applicable?: readonly CompiledPolicy[], tracer?: EvaluationTracer): Decision | Promise<Decision> {
    if (applicable === undefined) return this.run(input, env, this.candidatesFor(input.plugin), true, tracer, null);
    return this.run(input, env, applicable, false, tracer, null);
  }

  /**
   * The deny a rule makes whatever the request carries: the first deny rule of the applicable
   * policies whose condition reads no `args.*` or `context.*` and counts no rate limit, and holds
   * for this input (who asks, what it names); else undefined. For what a caller may never do
   * (an MCP tools/list leaves such tools out), not a decision: allow rules are not consulted.
   */
  denialRegardlessOfRequest(input: DecisionInput, applicable: readonly CompiledPolicy[]): Decision | undefined {
    for (const policy of applicable) {
      for (const rule of policy.rules) {
        if (rule.effect === 'deny' && !rule.readsRequest && rule.sync !== null && rule.sync(input)) return rule.decision;
      }
    }
    return undefined;
  }

  /** Dry run: the decision evaluate would make (limits peeked, nothing recorded) and every rule tried. */
  explain(input: DecisionInput, env: EvaluationEnv): Explanation | Promise<Explanation> {
    const tracer = new ExplanationTracer(this.policies, input);
    const decided = this.evaluate(input, dryRunOf(env), undefined, tracer);
    return decided instanceof Promise ? decided.then((decision) => tracer.explanation(decision)) : tracer.explanation(decided);
  }

  private candidatesFor(plugin: string): readonly CompiledPolicy[] {
    const cached = this.candidatesByPlugin.get(plugin);
    return cached !== undefined ? cached : this.findCandidates(plugin);
  }

  // Kept apart from candidatesFor: a closure over `plugin` there would allocate a context on every call.
  private findCandidates(plugin: string): readonly CompiledPolicy[] {
    const candidates = this.policies.filter((policy) => policy.matchesPlugin(plugin));
    if (this.candidatesByPlugin.size < MAX_CACHED_PLUGINS) this.candidatesByPlugin.set(plugin, candidates);
    return candidates;
  }

  // One flat loop over policies and rules: this is the hot path, so no per-rule calls beyond the
  // rule's own closure, and the tracer costs one null check per policy and per rule. It is
  // resumable at (policy, rule) for when a limiter answers with a Promise.
  private run(
    input: DecisionInput,
    env: EvaluationEnv,
    list: readonly CompiledPolicy[],
    filter: boolean,
    tracer: EvaluationTracer | undefined,
    start: Suspended | null,
  ): Decision | Promise<Decision> {
    let allowed = start === null ? null : start.allowed;
    let held = start === null ? null : start.held;
    let holds = start === null ? null : start.holds;
    let first = start === null ? null : start.first;
    let alerts = start === null ? null : start.alerts;
    let grants = start === null ? null : start.grants;
    for (let p = start === null ? 0 : start.policy; p < list.length; p++) {
      const policy = list[p];
      if (filter && policy.matchesRest !== null && !policy.matchesRest(input)) continue;
      if (first === null) first = policy;
      const resumed = start !== null && p === start.policy;
      let policyAllowed = resumed ? start.policyAllowed : false;
      if (tracer !== undefined && !resumed) tracer.policyEntered(policy);
      const rules = policy.rules;
      for (let r = resumed ? start.rule : 0; r < rules.length; r++) {
        const rule = rules[r];
        let fired: boolean;
        if (rule.sync !== null) {
          fired = rule.sync(input);
          if (tracer !== undefined) tracer.ruleEvaluated(rule, fired, undefined);
        } else {
          const recorder = new RateLimitRecorder(env);
          const answer = (rule.rated as RateTest)(input, recorder);
          if (typeof answer !== 'boolean') {
            const at: Suspended = { input, env, list, filter, tracer, policy: p, rule: r, allowed, held, holds, first, policyAllowed, alerts, grants };
            return this.suspend(answer, recorder, at);
          }
          fired = answer;
          const denied = settleRated(rule, fired, recorder, tracer);
          if (denied !== null && rule.effect === 'deny') return withAlerts(denied, alerts, grants);
          if (denied !== null) {
            if (held === null) held = denied;
            else (holds ??= [held]).push(denied);
            policyAllowed = true;
            continue;
          }
        }
        if (!fired) continue;
        if (rule.alert !== null) {
          (alerts ??= []).push(rule.alert);
          continue;
        }
        if (rule.grant !== null) {
          (grants ??= []).push(rule.grant);
          continue;
        }
        if (rule.effect === 'deny') return withAlerts(rule.decision, alerts, grants);
        if (rule.effect === 'require_approval') {
          // A hold answers for its policy (no `default: deny` after it), and the search for a deny goes on.
          if (held === null) held = rule.decision;
          else (holds ??= [held]).push(rule.decision);
          policyAllowed = true;
          continue;
        }
        if (!policyAllowed) {
          policyAllowed = true;
          if (allowed === null) allowed = rule.decision;
        }
      }
      if (policy.defaultDeny && !policyAllowed) return withAlerts(policy.defaultDecision, alerts, grants);
    }
    if (held !== null) return withAlerts(holds === null ? held : { ...held, approvalHolds: holds }, alerts, grants);
    if (allowed !== null) return withAlerts(allowed, alerts, grants);
    return withAlerts(first === null ? this.defaultDecision : first.allowDecision, alerts, grants);
  }

  // Apart from run: a closure there (over `this` and the recorder) would allocate a context on every call.
  private suspend(answer: Promise<boolean>, recorder: RateLimitRecorder, at: Suspended): Promise<Decision> {
    return answer.then((fired) => this.resume(fired, recorder, at));
  }

  /** Picks the loop up again after the rule whose limiter answered with a Promise. */
  private resume(fired: boolean, recorder: RateLimitRecorder, at: Suspended): Decision | Promise<Decision> {
    const rule = at.list[at.policy].rules[at.rule];
    const denied = settleRated(rule, fired, recorder, at.tracer);
    if (denied !== null && rule.effect === 'deny') return withAlerts(denied, at.alerts, at.grants);
    const alerting = fired && rule.alert !== null;
    const labelling = fired && rule.grant !== null;
    const allows = fired && !alerting && !labelling && denied === null && !at.policyAllowed;
    const next: Suspended = {
      ...at,
      rule: at.rule + 1,
      allowed: allows && at.allowed === null ? rule.decision : at.allowed,
      held: at.held ?? denied,
      holds: denied !== null && at.held !== null ? [...(at.holds ?? [at.held]), denied] : at.holds,
      policyAllowed: at.policyAllowed || (fired && !alerting && !labelling),
      alerts: alerting ? [...(at.alerts ?? []), rule.alert!] : at.alerts,
      grants: labelling ? [...(at.grants ?? []), rule.grant!] : at.grants,
    };
    return this.run(at.input, at.env, at.list, at.filter, at.tracer, next);
  }
}

function shadowDecision(decided: Decision): ShadowDecision {
  const outcome = decided.effect === 'allow' ? 'allow' : decided.approval !== undefined ? 'require_approval' : 'deny';
  return { policy: decided.policy, decision: outcome, rule: decided.rule, reason: decided.reason };
}

/** The environment of a dry run: rate limits and budgets peeked, nothing counted or reserved. */
function dryRunOf(env: EvaluationEnv): EvaluationEnv {
  const dryRun: EvaluationEnv = { limiter: peekingLimiter(env.limiter), nowMs: env.nowMs };
  if (env.budgets !== undefined) dryRun.budgets = peekingLedger(env.budgets);
  return dryRun;
}

/** Traces a rule with rate_limit; returns its deny (with the trip) when it fired, else null. */
function settleRated(rule: CompiledRule, fired: boolean, recorder: RateLimitRecorder, tracer: EvaluationTracer | undefined): Decision | null {
  if (tracer !== undefined) tracer.ruleEvaluated(rule, fired, recorder.consultation());
  return fired && (rule.effect === 'deny' || rule.effect === 'require_approval') ? rateLimitedDenial(rule, recorder) : null;
}

/** The decision with the alerts and labels fired on the way to it; the shared decision itself when none did. */
function withAlerts(decided: Decision, alerts: FiredAlert[] | null, grants: LabelGrant[] | null): Decision {
  if (alerts === null && grants === null) return decided;
  const extended: Decision = { ...decided };
  if (alerts !== null) extended.alerts = alerts;
  if (grants !== null) extended.labels = grants;
  return extended;
}

function rateLimitedDenial(rule: CompiledRule, recorder: RateLimitRecorder): Decision {
  const trip = recorder.trip();
  if (trip === undefined) return rule.decision;
  return recorder.tripIsBudget ? { ...rule.decision, budget: trip } : { ...rule.decision, rateLimit: trip };
}
