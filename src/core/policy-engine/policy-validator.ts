import { analyzeCondition, CheckedCondition } from './checker';
import type { ValidatedPolicy } from './compiled-policy';
import { globProblem } from './glob';
import { parseDuration } from './duration';
import type { Effect, MatchDefinition, PolicyDefinition, PolicyError, PolicyMode, RuleAction, RuleDefinition } from './types';

/** Keys and indexes from the document root to a value. */
export type SourcePath = readonly (string | number)[];

/** Maps a value's path (or its key, or an offset inside a string value) to a 1-based line and column. */
export interface SourceLocator {
  locate(path: SourcePath, where?: { key?: boolean; inner?: number }): { line: number; column: number };
}

interface Owner {
  readonly policy?: string;
  readonly rule?: string;
}

/** Collects every error of one load, each positioned through the locator. */
export class ValidationContext {
  readonly errors: PolicyError[] = [];

  constructor(
    readonly file: string,
    private readonly locator: SourceLocator,
  ) {}

  /** Line and column of a value, for messages that point at a second place. */
  position(path: SourcePath): { line: number; column: number } {
    return this.locator.locate(path);
  }

  report(path: SourcePath, message: string, owner: Owner, where?: { key?: boolean; inner?: number }): void {
    const { line, column } = this.locator.locate(path, where);
    this.errors.push({ file: this.file, ...owner, line, column, message });
  }
}

const POLICY_KEYS = ['name', 'description', 'mode', 'match', 'default', 'rules'];
const RULE_KEYS = ['name', 'condition', 'action', 'reason', 'approvers', 'timeout', 'labels', 'scope', 'ttl', 'cost'];
/** The longest a `label` rule with `scope: agent` may keep its labels on the agent. */
const MAX_LABEL_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** Most labels one rule adds. */
const MAX_RULE_LABELS = 16;
/** A label is a plain word: a lower-case letter, then lower-case letters, digits or `_` (up to 64). */
const LABEL_NAME = /^[a-z][a-z0-9_]{0,63}$/;
/** Largest `cost` one call may declare. */
export const MAX_CALL_COST = 1_000_000_000;
/** The longest a `require_approval` rule may make a request wait. */
const MAX_APPROVAL_TIMEOUT_MS = 7 * 24 * 60 * 60 * 1000;
const MATCH_KEYS = ['plugin', 'function', 'action'] as const;
const MAX_NAME_LENGTH = 200;

/** True for a plain mapping (not null, not a list). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const hasOwn = Object.prototype.hasOwnProperty;

function field(record: Record<string, unknown>, key: string): unknown {
  return hasOwn.call(record, key) ? record[key] : undefined;
}

/** Validates a list of policies (shape and every condition) and rejects duplicate names. */
export function validatePolicyList(value: unknown, context: ValidationContext, path: SourcePath): ValidatedPolicy[] {
  if (!Array.isArray(value)) {
    context.report(path, "'policies' must be a list", {});
    return [];
  }
  const seen = new Map<string, number>();
  const result: ValidatedPolicy[] = [];
  value.forEach((item, index) => {
    const itemPath = [...path, index];
    const policy = validatePolicy(item, context, itemPath);
    const name = isRecord(item) && typeof item.name === 'string' ? item.name : undefined;
    const firstIndex = name === undefined ? undefined : seen.get(name);
    if (firstIndex !== undefined) {
      const first = context.position([...path, firstIndex, 'name']);
      const where = first.line > 0 ? ` (first defined at line ${first.line})` : ` (policy #${firstIndex} has it)`;
      context.report([...itemPath, 'name'], `duplicate policy name '${name}'${where}`, { policy: name });
      return;
    }
    if (name !== undefined) seen.set(name, index);
    if (policy !== undefined) result.push(policy);
  });
  return result;
}

/** Validates one policy mapping; undefined (with errors reported) when anything is wrong. */
export function validatePolicy(value: unknown, context: ValidationContext, path: SourcePath): ValidatedPolicy | undefined {
  if (!isRecord(value)) {
    context.report(path, 'a policy must be a mapping with name and rules', {});
    return undefined;
  }
  const before = context.errors.length;
  const name = policyName(value, context, path);
  const owner: Owner = { policy: name };
  reportUnknownKeys(value, POLICY_KEYS, 'policy', context, path, owner);
  const description = optionalString(value, 'description', context, path, owner);
  const match = validateMatch(field(value, 'match'), context, [...path, 'match'], owner);
  const defaultEffect = optionalEffect(value, 'default', context, path, owner);
  const mode = optionalMode(value, context, path, owner);
  const rules = validateRules(value, name, context, path);
  if (context.errors.length > before || name === undefined || rules === undefined) return undefined;
  const definition: PolicyDefinition = {
    name,
    ...(description === undefined ? {} : { description }),
    ...(mode === 'shadow' ? { mode } : {}),
    ...(match === undefined ? {} : { match }),
    ...(defaultEffect === undefined ? {} : { default: defaultEffect }),
    rules: rules.map((rule) => rule.definition),
  };
  return { definition, conditions: rules.map((rule) => rule.condition) };
}

function policyName(value: Record<string, unknown>, context: ValidationContext, path: SourcePath): string | undefined {
  const name = field(value, 'name');
  if (name === undefined) {
    context.report(path, "missing required field 'name'", {});
    return undefined;
  }
  const problem = nameProblem(name);
  if (problem !== undefined) {
    context.report([...path, 'name'], problem, {});
    return undefined;
  }
  if (name === 'default') {
    context.report([...path, 'name'], "policy name 'default' is reserved: it names the decision when no policy applies", {});
    return undefined;
  }
  return name as string;
}

function nameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.trim() === '') return "'name' must be a non-empty string";
  if (name.length > MAX_NAME_LENGTH) return `'name' must be at most ${MAX_NAME_LENGTH} characters`;
  if (hasControlCharacter(name)) return "'name' must not contain control characters";
  return undefined;
}

function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

function reportUnknownKeys(
  value: Record<string, unknown>,
  known: readonly string[],
  what: string,
  context: ValidationContext,
  path: SourcePath,
  owner: Owner,
): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      context.report([...path, key], `unknown key '${key}' in ${what} (expected ${known.join(', ')})`, owner, { key: true });
    }
  }
}

function optionalString(
  value: Record<string, unknown>,
  key: string,
  context: ValidationContext,
  path: SourcePath,
  owner: Owner,
): string | undefined {
  const text = field(value, key);
  if (text === undefined) return undefined;
  if (typeof text !== 'string') context.report([...path, key], `'${key}' must be a string`, owner);
  return typeof text === 'string' ? text : undefined;
}

function optionalEffect(
  value: Record<string, unknown>,
  key: string,
  context: ValidationContext,
  path: SourcePath,
  owner: Owner,
): Effect | undefined {
  const effect = field(value, key);
  if (effect === undefined) return undefined;
  if (effect === 'allow' || effect === 'deny') return effect;
  context.report([...path, key], `'${key}' must be 'allow' or 'deny'`, owner);
  return undefined;
}

function optionalMode(value: Record<string, unknown>, context: ValidationContext, path: SourcePath, owner: Owner): PolicyMode | undefined {
  const mode = field(value, 'mode');
  if (mode === undefined || mode === 'enforce' || mode === 'shadow') return mode;
  context.report([...path, 'mode'], "'mode' must be 'enforce' or 'shadow'", owner);
  return undefined;
}

function validateMatch(value: unknown, context: ValidationContext, path: SourcePath, owner: Owner): MatchDefinition | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value)) {
    context.report(path, "'match' must be a mapping of plugin, function and/or action globs", owner);
    return undefined;
  }
  reportUnknownKeys(value, MATCH_KEYS, 'match', context, path, owner);
  const match: MatchDefinition = {};
  for (const key of MATCH_KEYS) {
    const glob = field(value, key);
    if (glob === undefined) continue;
    const problem = typeof glob === 'string' ? globProblem(glob) : 'a glob must be a string';
    if (problem === undefined) match[key] = glob as string;
    else context.report([...path, key], `bad glob in match.${key}: ${problem}`, owner);
  }
  return match;
}

interface ValidatedRule {
  readonly definition: RuleDefinition;
  readonly condition: CheckedCondition;
}

function validateRules(
  value: Record<string, unknown>,
  policy: string | undefined,
  context: ValidationContext,
  path: SourcePath,
): ValidatedRule[] | undefined {
  const rules = field(value, 'rules');
  if (rules === undefined) {
    context.report(path, "missing required field 'rules'", { policy });
    return undefined;
  }
  if (!Array.isArray(rules)) {
    context.report([...path, 'rules'], "'rules' must be a list", { policy });
    return undefined;
  }
  const names = new Set<string>();
  const result: ValidatedRule[] = [];
  rules.forEach((rule, index) => {
    const validated = validateRule(rule, index, policy, names, context, [...path, 'rules', index]);
    if (validated !== undefined) result.push(validated);
  });
  return result.length === rules.length ? result : undefined;
}

function validateRule(
  value: unknown,
  index: number,
  policy: string | undefined,
  names: Set<string>,
  context: ValidationContext,
  path: SourcePath,
): ValidatedRule | undefined {
  const fallbackLabel = `${policy ?? ''}#${index}`;
  if (!isRecord(value)) {
    context.report(path, 'a rule must be a mapping with condition, action and reason', { policy, rule: fallbackLabel });
    return undefined;
  }
  const before = context.errors.length;
  const name = ruleName(value, names, context, path, policy);
  const owner: Owner = { policy, rule: name ?? fallbackLabel };
  reportUnknownKeys(value, RULE_KEYS, 'rule', context, path, owner);
  const action = requiredAction(value, context, path, owner);
  const reason = requiredReason(value, context, path, owner);
  const condition = validateCondition(value, context, path, owner);
  const approval = approvalFields(value, action, context, path, owner);
  const labelling = labelFields(value, action, context, path, owner);
  const cost = costField(value, action, condition?.checked, context, path, owner);
  if (context.errors.length > before || action === undefined || reason === undefined || condition === undefined) return undefined;
  const definition: RuleDefinition = { ...(name === undefined ? {} : { name }), condition: condition.text, action, reason, ...approval, ...labelling, ...cost };
  return { definition, condition: condition.checked };
}

function ruleName(
  value: Record<string, unknown>,
  names: Set<string>,
  context: ValidationContext,
  path: SourcePath,
  policy: string | undefined,
): string | undefined {
  const name = field(value, 'name');
  if (name === undefined) return undefined;
  const problem = nameProblem(name);
  if (problem !== undefined) {
    context.report([...path, 'name'], problem, { policy });
    return undefined;
  }
  const text = name as string;
  if (names.has(text)) context.report([...path, 'name'], `duplicate rule name '${text}' in policy '${policy ?? ''}'`, { policy, rule: text });
  names.add(text);
  return text;
}

function requiredAction(value: Record<string, unknown>, context: ValidationContext, path: SourcePath, owner: Owner): RuleAction | undefined {
  const action = field(value, 'action');
  if (action === undefined) {
    context.report(path, "missing required field 'action' (allow, deny, alert, require_approval or label)", owner);
    return undefined;
  }
  if (action === 'allow' || action === 'deny' || action === 'alert' || action === 'require_approval' || action === 'label') return action;
  context.report([...path, 'action'], "'action' must be 'allow', 'deny', 'alert', 'require_approval' or 'label'", owner);
  return undefined;
}

/** `labels` (plain words), `scope` (session or agent) and `ttl` (agent scope, 1s to 30d): `label` rules only. */
function labelFields(
  value: Record<string, unknown>,
  action: RuleAction | undefined,
  context: ValidationContext,
  path: SourcePath,
  owner: Owner,
): Pick<RuleDefinition, 'labels' | 'scope' | 'ttl'> {
  const labels = field(value, 'labels');
  const scope = field(value, 'scope');
  const ttl = field(value, 'ttl');
  if (action !== 'label') {
    for (const [key, given] of [['labels', labels], ['scope', scope], ['ttl', ttl]] as const) {
      if (given !== undefined) context.report([...path, key], `'${key}' belongs to rules with action label`, owner);
    }
    return {};
  }
  const fields: Pick<RuleDefinition, 'labels' | 'scope' | 'ttl'> = {};
  if (labels === undefined) context.report(path, "missing required field 'labels' (a list of label names) for action label", owner);
  else if (!Array.isArray(labels) || labels.length === 0 || labels.length > MAX_RULE_LABELS) context.report([...path, 'labels'], `'labels' must be a list of 1 to ${MAX_RULE_LABELS} label names`, owner);
  else {
    labels.forEach((label, index) => {
      if (typeof label !== 'string' || !LABEL_NAME.test(label)) {
        context.report([...path, 'labels', index], `bad label ${JSON.stringify(label)}: a label is a plain word (a lower-case letter, then lower-case letters, digits or _; up to 64)`, owner);
      }
    });
    fields.labels = labels as string[];
  }
  if (scope !== undefined && scope !== 'session' && scope !== 'agent') context.report([...path, 'scope'], "'scope' must be 'session' or 'agent'", owner);
  else if (scope !== undefined) fields.scope = scope;
  if (scope === 'agent') {
    const ms = typeof ttl === 'string' ? safeDuration(ttl) : undefined;
    if (ttl === undefined) context.report([...path, 'scope'], "a label rule with scope agent needs a 'ttl' (1s to 30d): how long the agent keeps the labels", owner);
    else if (ms === undefined || ms < 1000 || ms > MAX_LABEL_TTL_MS) context.report([...path, 'ttl'], "'ttl' must be a duration from 1s to 30d, like 24h", owner);
    else fields.ttl = ttl as string;
  } else if (ttl !== undefined) {
    context.report([...path, 'ttl'], "'ttl' belongs to label rules with scope agent (session labels last as long as the session)", owner);
  }
  return fields;
}

/** `cost`: what one call reserves of the budgets of a deny rule that calls budget(...). */
function costField(
  value: Record<string, unknown>,
  action: RuleAction | undefined,
  condition: CheckedCondition | undefined,
  context: ValidationContext,
  path: SourcePath,
  owner: Owner,
): Pick<RuleDefinition, 'cost'> {
  const cost = field(value, 'cost');
  const budgets = condition?.budgets.length ?? 0;
  if (budgets > 0 && action !== undefined && action !== 'deny') {
    context.report([...path, 'action'], `a rule calling budget(...) must deny (it holds when the budget cannot take the call), not ${action}`, owner);
  }
  if (cost === undefined) return {};
  if (condition !== undefined && budgets === 0) {
    context.report([...path, 'cost'], "'cost' belongs to rules whose condition calls budget(...)", owner);
    return {};
  }
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost <= 0 || cost > MAX_CALL_COST) {
    context.report([...path, 'cost'], `'cost' must be a number above 0 and at most ${MAX_CALL_COST}`, owner);
    return {};
  }
  return { cost };
}

/** `approvers` (a list of tags) and `timeout` (a duration up to 7d): `require_approval` rules only. */
function approvalFields(
  value: Record<string, unknown>,
  action: RuleAction | undefined,
  context: ValidationContext,
  path: SourcePath,
  owner: Owner,
): Pick<RuleDefinition, 'approvers' | 'timeout'> {
  const approvers = field(value, 'approvers');
  const timeout = field(value, 'timeout');
  if (action !== 'require_approval') {
    for (const [key, given] of [['approvers', approvers], ['timeout', timeout]] as const) {
      if (given !== undefined) context.report([...path, key], `'${key}' belongs to rules with action require_approval`, owner);
    }
    return {};
  }
  const fields: Pick<RuleDefinition, 'approvers' | 'timeout'> = {};
  if (approvers !== undefined) {
    if (Array.isArray(approvers) && approvers.every((tag) => typeof tag === 'string' && tag.trim() !== '')) fields.approvers = approvers as string[];
    else context.report([...path, 'approvers'], "'approvers' must be a list of tags", owner);
  }
  if (timeout !== undefined) {
    const ms = typeof timeout === 'string' ? safeDuration(timeout) : undefined;
    if (ms === undefined || ms < 1000 || ms > MAX_APPROVAL_TIMEOUT_MS) context.report([...path, 'timeout'], "'timeout' must be a duration from 1s to 7d, like 5m or 2h", owner);
    else fields.timeout = timeout as string;
  }
  return fields;
}

function safeDuration(text: string): number | undefined {
  try {
    return parseDuration(text);
  } catch {
    return undefined;
  }
}

function requiredReason(value: Record<string, unknown>, context: ValidationContext, path: SourcePath, owner: Owner): string | undefined {
  const reason = field(value, 'reason');
  if (reason === undefined) {
    context.report(path, "missing required field 'reason'", owner);
    return undefined;
  }
  if (typeof reason === 'string' && reason.trim() !== '') return reason;
  context.report([...path, 'reason'], "'reason' must be a non-empty string", owner);
  return undefined;
}

function validateCondition(
  value: Record<string, unknown>,
  context: ValidationContext,
  path: SourcePath,
  owner: Owner,
): { text: string; checked: CheckedCondition } | undefined {
  const raw = field(value, 'condition');
  if (raw === undefined) {
    context.report(path, "missing required field 'condition'", owner);
    return undefined;
  }
  // YAML reads `condition: true` as a boolean; it means the constant condition.
  const text = typeof raw === 'boolean' ? String(raw) : raw;
  if (typeof text !== 'string') {
    context.report([...path, 'condition'], "'condition' must be a string", owner);
    return undefined;
  }
  const result = analyzeCondition(text);
  if ('condition' in result) return { text, checked: result.condition };
  for (const issue of result.issues) context.report([...path, 'condition'], issue.message, owner, { inner: issue.offset });
  return undefined;
}
