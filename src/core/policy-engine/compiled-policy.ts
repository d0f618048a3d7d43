import type { CheckedCondition } from './checker';
import { compileCondition } from './compiler';
import type { SyncTest } from './sync-test';
import { caseInsensitiveGlobMatcher } from './glob';
import type { RateTest } from './rate-limit-call';
import { budgetKeyPrefix, budgetLabel } from './budget-call';
import { parseDuration } from './duration';
import type { Decision, Effect, FiredAlert, LabelGrant, MatchDefinition, MatchTarget, PolicyDefinition, RuleAction, RuleDefinition } from './types';

/** One rule, compiled; exactly one of `sync` and `rated` is set. */
export interface CompiledRule {
  /** Rule name, else `<policy>#<index>` (0-based). */
  readonly label: string;
  readonly effect: RuleAction;
  readonly sync: SyncTest | null;
  readonly rated: RateTest | null;
  /** Shared outcome when the rule fires: its deny, or the allow it grants (an `alert` rule never decides: unused). */
  readonly decision: Decision;
  /** What an `alert` rule raises when it fires; null for allow and deny rules. */
  readonly alert: FiredAlert | null;
  /** What a `label` rule adds when it fires; null for other rules. */
  readonly grant: LabelGrant | null;
  /** True when the condition reads the request's `args.*` or `context.*`, or counts a rate limit. */
  readonly readsRequest: boolean;
}

/** One `budget(...)` call of a rule: where its totals are kept and what they may reach. */
export interface BudgetSite {
  /** Key prefix of its totals (`budgetKeyPrefix`); the partition follows. */
  readonly prefix: string;
  /** `100/1d per_agent budget`. */
  readonly label: string;
  readonly limit: number;
  readonly windowMs: number;
}

/** A checked policy ready to compile. */
export interface ValidatedPolicy {
  readonly definition: PolicyDefinition;
  readonly conditions: readonly CheckedCondition[];
}

/** A policy compiled for evaluation; decisions for every non-rate-limited outcome are built here, once. */
export class CompiledPolicy {
  readonly name: string;
  readonly definition: PolicyDefinition;
  /** Evaluated beside the decision and recorded, never enforced (`mode: shadow`). */
  readonly shadow: boolean;
  /** Top-level `args` names its conditions read. */
  readonly argNames: ReadonlySet<string>;
  /** Counts a rate limit or reserves a budget: the same input may be decided otherwise a moment later. */
  readonly usesRateLimit: boolean;
  /** Reads or adds what a session remembers (`session.*`, `agent.labels`, `label` rules, per_session budgets). */
  readonly usesSession: boolean;
  /** Reserves budgets: a decision holds what its outcome settles. */
  readonly usesBudget: boolean;
  /** Reads an arg other than `path` and `method`, so the gateway must parse the JSON body. */
  readonly readsBodyArgs: boolean;
  /** Its `budget(...)` calls, each with the key prefix of its totals (what a sidecar's lease names). */
  readonly budgetSites: readonly BudgetSite[];
  readonly rules: readonly CompiledRule[];
  readonly matchesEverything: boolean;
  /** Whether the policy's `match` globs all accept the target; globs ignore case (docs/policies.md "Shape"). */
  readonly matches: (target: MatchTarget) => boolean;
  /** Whether the `match.plugin` glob (if any) accepts a plugin name. */
  readonly matchesPlugin: (plugin: string) => boolean;
  /** The `function` and `action` globs; null when the policy has neither. */
  readonly matchesRest: ((target: MatchTarget) => boolean) | null;
  readonly defaultDeny: boolean;
  /** The deny when `default: deny` and no allow rule fired. */
  readonly defaultDecision: Decision;
  /** The allow when the policy applied but none of its allow rules fired. */
  readonly allowDecision: Decision;

  constructor(validated: ValidatedPolicy, namespace: string | undefined) {
    const { definition, conditions } = validated;
    this.name = definition.name;
    this.definition = definition;
    this.shadow = definition.mode === 'shadow';
    this.argNames = new Set(conditions.flatMap((condition) => [...condition.argNames]));
    this.usesBudget = conditions.some((condition) => condition.budgets.length > 0);
    this.usesRateLimit = this.usesBudget || conditions.some((condition) => condition.rateLimits.length > 0);
    this.usesSession = definition.rules.some((rule) => rule.action === 'label') || conditions.some((condition) => condition.readsSession);
    this.readsBodyArgs = [...this.argNames].some((name) => name !== 'path' && name !== 'method');
    this.rules = definition.rules.map((rule, index) => compileRule(definition.name, rule, index, conditions[index], namespace));
    this.budgetSites = conditions.flatMap((condition, ruleIndex) =>
      condition.budgets.map((ir) => Object.freeze({ prefix: budgetKeyPrefix(ir, { policy: definition.name, ruleIndex, namespace }), label: budgetLabel(ir), limit: ir.limit, windowMs: ir.windowMs })),
    );
    this.matchesEverything = matchKeys(definition.match).length === 0;
    this.matches = targetMatcher(definition.match, matchKeys(definition.match));
    const pluginGlob = matchKeys(definition.match).includes('plugin') ? definition.match?.plugin : undefined;
    this.matchesPlugin = pluginGlob === undefined ? () => true : caseInsensitiveGlobMatcher(pluginGlob);
    const restKeys = matchKeys(definition.match).filter((key) => key !== 'plugin');
    this.matchesRest = restKeys.length === 0 ? null : targetMatcher(definition.match, restKeys);
    this.defaultDeny = definition.default === 'deny';
    this.defaultDecision = decision('deny', this.name, `${this.name}#default`, `No allow rule of policy ${this.name} matched`);
    this.allowDecision = decision('allow', this.name, null, 'allowed');
  }
}

/** A frozen Decision: outcomes are shared between evaluations. */
export function decision(effect: Effect, policy: string, rule: string | null, reason: string): Decision {
  return Object.freeze({ effect, policy, rule, reason });
}

function compileRule(
  policy: string,
  rule: RuleDefinition,
  index: number,
  condition: CheckedCondition,
  namespace: string | undefined,
): CompiledRule {
  const label = rule.name ?? `${policy}#${index}`;
  const compiled = compileCondition(condition.ir, { policy, ruleIndex: index, namespace, cost: rule.cost }, rule.action !== 'allow');
  return {
    label,
    effect: rule.action,
    sync: compiled.sync,
    rated: compiled.rated,
    decision: ruleDecision(rule, policy, label),
    alert: rule.action === 'alert' ? Object.freeze({ policy, rule: label, reason: rule.reason }) : null,
    grant: rule.action === 'label' ? labelGrant(rule, policy, label) : null,
    readsRequest: condition.readsRequest || condition.rateLimits.length > 0 || condition.budgets.length > 0,
  };
}

function labelGrant(rule: RuleDefinition, policy: string, label: string): LabelGrant {
  const scope = rule.scope ?? 'session';
  return Object.freeze({ policy, rule: label, labels: Object.freeze([...(rule.labels ?? [])]), scope, ttlMs: scope === 'agent' && rule.ttl !== undefined ? parseDuration(rule.ttl) : 0 });
}

/** A `require_approval` rule's wait when its policy names none. */
export const DEFAULT_APPROVAL_TIMEOUT = '5m';

/** The shared outcome of a rule that fires: `require_approval` is a deny that an approval can lift. */
function ruleDecision(rule: RuleDefinition, policy: string, label: string): Decision {
  if (rule.action === 'alert' || rule.action === 'label') return decision('allow', policy, label, rule.reason);
  if (rule.action !== 'require_approval') return decision(rule.action, policy, label, rule.reason);
  const approval = Object.freeze({ approvers: Object.freeze([...(rule.approvers ?? [])]), timeoutMs: parseDuration(rule.timeout ?? DEFAULT_APPROVAL_TIMEOUT) });
  return Object.freeze({ effect: 'deny', policy, rule: label, reason: rule.reason, approval });
}

type MatchKey = keyof MatchDefinition;

function matchKeys(match: MatchDefinition | undefined): MatchKey[] {
  if (match === undefined) return [];
  return (['plugin', 'function', 'action'] as const).filter((key) => match[key] !== undefined && match[key] !== '*');
}

function targetMatcher(match: MatchDefinition | undefined, keys: readonly MatchKey[]): (target: MatchTarget) => boolean {
  if (match === undefined || keys.length === 0) return () => true;
  const checks = keys.map((key) => keyMatcher(key, caseInsensitiveGlobMatcher(match[key] as string)));
  if (checks.length === 1) return checks[0];
  if (checks.length === 2) {
    const [first, second] = checks;
    return (target) => first(target) && second(target);
  }
  const [first, second, third] = checks;
  return (target) => first(target) && second(target) && third(target);
}

function keyMatcher(key: MatchKey, glob: (subject: string) => boolean): (target: MatchTarget) => boolean {
  switch (key) {
    case 'plugin':
      return (target) => glob(target.plugin);
    case 'function':
      return (target) => glob(target.function);
    case 'action':
      return (target) => glob(target.action);
  }
}
