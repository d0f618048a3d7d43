import { CallNode, CompareNode, ConditionAst, PathNode, spanOf } from './ast';
import { parseDuration } from './duration';
import { ConditionSyntaxError } from './errors';
import { AGENT_FIELDS, AgentField, BoolIr, BUDGET_SCOPES, BudgetIr, BudgetScope, SESSION_FIELDS, SessionField, DELEGATION_FIELDS, DelegationField, INPUT_FIELDS, InputField, ORG_FIELDS, OrgField, PathRef, RATE_LIMIT_SCOPES, RateLimitIr, RateLimitScope, TierOperand, TierOperator, ValueIr, TOOL_FIELDS, ToolField } from './ir';
import { parseCondition } from './parser';
import { compileLinearRegex } from './linear-regex';
import { globProblem } from './glob';
import { CANONICAL_TIERS, TIER_NAMES, tierRank } from './tiers';

/** A problem in a condition, at a 0-based offset into its text. */
export interface ConditionIssue {
  readonly offset: number;
  readonly message: string;
}

/** A condition that passed every check, ready to compile. */
export interface CheckedCondition {
  readonly ir: BoolIr;
  /** Top-level `args` names the condition reads. */
  readonly argNames: ReadonlySet<string>;
  readonly rateLimits: readonly RateLimitIr[];
  readonly budgets: readonly BudgetIr[];
  /** True when the condition reads what the session or the agent remembers (`session.*`, `agent.labels`). */
  readonly readsSession: boolean;
  /** True when the condition reads what the request carries (`args.*`, `context.*`): false, it decides on who asks and what it names alone. */
  readonly readsRequest: boolean;
}

/** A checked condition, or every issue found in it. */
export type CheckResult = { ok: true; condition: CheckedCondition } | { ok: false; issues: ConditionIssue[] };

/** Largest `count` of rate_limit: the in-process limiter keeps up to this many timestamps per key. */
export const MAX_RATE_LIMIT_COUNT = 1_000_000;
/** Largest `limit` of budget: totals stay exact in a double far beyond it. */
export const MAX_BUDGET_LIMIT = 1_000_000_000_000;

const ROOTS = ['agent', 'args', 'context', 'action', 'resource', 'plugin', 'function', 'delegation', 'org', 'tool', 'session'];
const FUNCTIONS = 'exists, rate_limit, budget, session.called, session.count, session.labels.has or agent.labels.has';
const TIER_OPERATORS: ReadonlySet<string> = new Set(['==', '!=', '<', '<=', '>', '>=']);
const TIER_HINT = `expected ${CANONICAL_TIERS.join(', ')} or an alias (${TIER_NAMES.filter(
  (name) => !(CANONICAL_TIERS as readonly string[]).includes(name),
).join(', ')})`;

/** Parses and checks a condition, reporting syntax and meaning problems as issues (never throws for bad text). */
export function analyzeCondition(text: string): CheckResult {
  let ast: ConditionAst;
  try {
    ast = parseCondition(text);
  } catch (error) {
    if (error instanceof ConditionSyntaxError) return { ok: false, issues: [{ offset: error.offset, message: error.message }] };
    throw error;
  }
  return checkCondition(ast, text);
}

/**
 * Resolves names and validates operators, functions, tiers, regexes and rate limits; collects every
 * issue. `text` is the condition `ast` was parsed from, to place issues inside string literals.
 */
export function checkCondition(ast: ConditionAst, text: string): CheckResult {
  const checker = new ConditionChecker(text);
  const ir = checker.condition(ast);
  if (checker.issues.length > 0) return { ok: false, issues: checker.issues };
  const { argNames, rateLimits, budgets, readsSession } = checker;
  return { ok: true, condition: { ir, argNames, rateLimits, budgets, readsSession, readsRequest: checker.readsRequest || readsSession } };
}

const PLACEHOLDER: BoolIr = { kind: 'constant', value: false };

class ConditionChecker {
  readonly issues: ConditionIssue[] = [];
  readonly argNames = new Set<string>();
  readsRequest = false;
  readonly rateLimits: RateLimitIr[] = [];
  readonly budgets: BudgetIr[] = [];
  readsSession = false;
  private operandDepth = 0;
  private negations = 0;

  constructor(private readonly text: string) {}

  condition(node: ConditionAst): BoolIr {
    switch (node.kind) {
      case 'or':
      case 'and':
        return { kind: node.kind, left: this.condition(node.left), right: this.condition(node.right) };
      case 'not': {
        this.negations++;
        const operand = this.condition(node.operand);
        this.negations--;
        return { kind: 'not', operand };
      }
      case 'compare':
        return this.compare(node);
      case 'call':
        return this.call(node);
      case 'boolean':
        return { kind: 'constant', value: node.value };
      case 'path': {
        const path = this.path(node);
        return path === undefined ? PLACEHOLDER : { kind: 'truthy', value: { kind: 'path', path } };
      }
      default:
        return this.fail(node, `expected a condition, found ${describeNode(node)}`, PLACEHOLDER);
    }
  }

  private value(node: ConditionAst): ValueIr {
    switch (node.kind) {
      case 'path': {
        const path = this.path(node);
        return path === undefined ? { kind: 'literal', value: false } : { kind: 'path', path };
      }
      case 'string':
      case 'number':
      case 'boolean':
        return { kind: 'literal', value: node.value };
      case 'list':
        return { kind: 'literal', value: node.items.map((item) => item.value) };
      case 'duration':
        return this.fail(node, `a duration such as ${node.text} is only allowed as the window of rate_limit or budget`, {
          kind: 'literal',
          value: false,
        });
      case 'call':
        if (node.name === 'session.count') return this.sessionCount(node);
        return this.operandTest(node);
      default:
        return this.operandTest(node);
    }
  }

  private operandTest(node: ConditionAst): ValueIr {
    this.operandDepth++;
    const test = this.condition(node);
    this.operandDepth--;
    return { kind: 'test', test };
  }

  private compare(node: CompareNode): BoolIr {
    if (node.op === 'matches') return this.matches(node);
    const leftTier = isTrustTier(node.left);
    const rightTier = isTrustTier(node.right);
    if (node.op === 'in' && leftTier) return this.tierIn(node);
    if (TIER_OPERATORS.has(node.op) && (leftTier || rightTier)) {
      return {
        kind: 'tier-compare',
        op: node.op as TierOperator,
        left: this.tierOperand(node.left),
        right: this.tierOperand(node.right),
      };
    }
    return { kind: 'compare', op: node.op, left: this.value(node.left), right: this.value(node.right) };
  }

  private matches(node: CompareNode): BoolIr {
    const left = this.value(node.left);
    if (node.right.kind !== 'string') {
      return this.fail(node.right, 'the right side of matches must be a quoted regular expression', PLACEHOLDER);
    }
    const compiled = compileLinearRegex(node.right.value);
    // `in` narrowing keeps this compiling under non-strict settings too (the bench's quick build).
    if ('reason' in compiled) {
      return this.failAt(this.stringValueOffset(node.right, compiled.offset), `unsafe or invalid regular expression: ${compiled.reason}`, PLACEHOLDER);
    }
    return { kind: 'matches', left, regex: compiled.regex };
  }

  private tierOperand(node: ConditionAst): TierOperand {
    const fallback: TierOperand = { kind: 'rank', rank: -1 };
    if (node.kind === 'string') return this.tierLiteral(node, node.value, `'${node.value}' is not a trust tier`);
    if (node.kind === 'path' && node.segments.length === 0 && !ROOTS.includes(node.root)) {
      return this.tierLiteral(node, node.root, `unknown trust tier '${node.root}'`);
    }
    if (node.kind === 'path') return { kind: 'value', value: this.value(node) };
    return this.fail(node, `agent.trust_tier can only be compared with a trust tier, found ${describeNode(node)}`, fallback);
  }

  private tierLiteral(node: ConditionAst, name: string, problem: string): TierOperand {
    const rank = tierRank(name);
    if (rank === undefined) return this.fail(node, `${problem}: ${TIER_HINT}`, { kind: 'rank', rank: -1 });
    return { kind: 'rank', rank };
  }

  private tierIn(node: CompareNode): BoolIr {
    const left = this.tierOperand(node.left);
    if (node.right.kind === 'path') return { kind: 'tier-in-value', left, list: this.value(node.right) };
    if (node.right.kind !== 'list') {
      return this.fail(node.right, 'agent.trust_tier in … needs a list of trust tiers or a path', PLACEHOLDER);
    }
    const ranks = node.right.items.map((item) => {
      const rank = typeof item.value === 'string' ? tierRank(item.value) : undefined;
      if (rank === undefined) this.fail(item, `${describeNode(item)} is not a trust tier: ${TIER_HINT}`, undefined);
      return rank ?? -1;
    });
    return { kind: 'tier-in', left, ranks };
  }

  private call(node: CallNode): BoolIr {
    if (node.name === 'exists') return this.exists(node);
    if (node.name === 'rate_limit') return this.rateLimit(node);
    if (node.name === 'budget') return this.budget(node);
    if (node.name === 'session.called') {
      const glob = this.sessionGlob(node);
      return glob === undefined ? PLACEHOLDER : { kind: 'session-called', glob };
    }
    if (node.name === 'session.count') return this.fail(node, 'session.count(...) is a number: compare it, e.g. session.count("call:mail/*") >= 3', PLACEHOLDER);
    if (node.name === 'session.labels.has' || node.name === 'agent.labels.has') return this.labelsHas(node);
    return this.fail(node, `unknown function '${node.name}' (expected ${FUNCTIONS})`, PLACEHOLDER);
  }

  /** `session.labels.has("x")`, `agent.labels.has("x")`: the label is on the session, or on the agent. */
  private labelsHas(node: CallNode): BoolIr {
    const [arg] = node.args;
    if (node.args.length !== 1 || arg.kind !== 'string') return this.fail(node, `${node.name}() takes 1 argument, a quoted label such as "private_data"`, PLACEHOLDER);
    this.readsSession = true;
    const path: PathRef = node.name === 'agent.labels.has' ? { kind: 'agent-labels' } : { kind: 'session', field: 'labels' };
    return { kind: 'compare', op: 'contains', left: { kind: 'path', path }, right: { kind: 'literal', value: arg.value } };
  }

  private sessionCount(node: CallNode): ValueIr {
    const glob = this.sessionGlob(node);
    return glob === undefined ? { kind: 'literal', value: 0 } : { kind: 'session-count', glob };
  }

  /** The action glob of `session.called(...)` or `session.count(...)`. */
  private sessionGlob(node: CallNode): string | undefined {
    const [arg] = node.args;
    if (node.args.length !== 1 || arg.kind !== 'string') return this.fail(node, `${node.name}() takes 1 argument, a quoted action glob such as "read:customers/*"`, undefined);
    const problem = globProblem(arg.value);
    if (problem !== undefined) return this.fail(arg, `bad glob in ${node.name}(): ${problem}`, undefined);
    this.readsSession = true;
    return arg.value;
  }

  private budget(node: CallNode): BoolIr {
    if (this.operandDepth > 0) {
      return this.fail(node, 'budget(...) is a condition on its own; it cannot be an operand of a comparison', PLACEHOLDER);
    }
    // Under `not` a spent budget would let the call through and a reservation would deny it.
    if (this.negations > 0) return this.fail(node, 'budget(...) cannot be negated: it holds when the budget cannot take the call', PLACEHOLDER);
    if (node.args.length !== 3) {
      return this.fail(node, `budget() takes 3 arguments (scope, limit, window), got ${node.args.length}`, PLACEHOLDER);
    }
    const scope = this.budgetScope(node.args[0]);
    const limit = this.budgetLimit(node.args[1]);
    const window = this.rateWindow(node.args[2], 'budget');
    if (scope === undefined || limit === undefined || window === undefined) return PLACEHOLDER;
    const ir: BudgetIr = { kind: 'budget', scope, limit, ...window, callIndex: this.budgets.length };
    this.budgets.push(ir);
    if (scope === 'per_session') this.readsSession = true;
    return ir;
  }

  private budgetScope(node: ConditionAst): BudgetScope | undefined {
    const word = node.kind === 'path' && node.segments.length === 0 ? node.root : undefined;
    if (word !== undefined && (BUDGET_SCOPES as readonly string[]).includes(word)) return word as BudgetScope;
    return this.fail(node, `bad budget scope: expected ${BUDGET_SCOPES.join(', ')}`, undefined);
  }

  private budgetLimit(node: ConditionAst): number | undefined {
    if (node.kind === 'number' && node.value > 0 && node.value <= MAX_BUDGET_LIMIT) return node.value;
    return this.fail(node, `bad budget limit: expected a number above 0 and at most ${MAX_BUDGET_LIMIT}`, undefined);
  }

  private exists(node: CallNode): BoolIr {
    if (node.args.length !== 1) {
      return this.fail(node, `exists() takes 1 argument (a path), got ${node.args.length}`, PLACEHOLDER);
    }
    const arg = node.args[0];
    if (arg.kind !== 'path') return this.fail(arg, 'exists() takes a path such as args.name', PLACEHOLDER);
    const path = this.path(arg);
    return path === undefined ? PLACEHOLDER : { kind: 'exists', path };
  }

  private rateLimit(node: CallNode): BoolIr {
    if (this.operandDepth > 0) {
      return this.fail(node, 'rate_limit(...) is a condition on its own; it cannot be an operand of a comparison', PLACEHOLDER);
    }
    if (node.args.length !== 3) {
      return this.fail(node, `rate_limit() takes 3 arguments (scope, count, window), got ${node.args.length}`, PLACEHOLDER);
    }
    const scope = this.rateScope(node.args[0]);
    const count = this.rateCount(node.args[1]);
    const window = this.rateWindow(node.args[2], 'rate_limit');
    if (scope === undefined || count === undefined || window === undefined) return PLACEHOLDER;
    const ir: RateLimitIr = { kind: 'rate_limit', scope, count, ...window, callIndex: this.rateLimits.length };
    this.rateLimits.push(ir);
    return ir;
  }

  private rateScope(node: ConditionAst): RateLimitScope | undefined {
    const word = node.kind === 'path' && node.segments.length === 0 ? node.root : undefined;
    if (word !== undefined && (RATE_LIMIT_SCOPES as readonly string[]).includes(word)) return word as RateLimitScope;
    return this.fail(node, `bad rate_limit scope: expected ${RATE_LIMIT_SCOPES.join(', ')}`, undefined);
  }

  private rateCount(node: ConditionAst): number | undefined {
    const ok = node.kind === 'number' && Number.isInteger(node.value) && node.value > 0 && node.value <= MAX_RATE_LIMIT_COUNT;
    if (ok) return node.value;
    return this.fail(node, `bad rate_limit count: expected a whole number from 1 to ${MAX_RATE_LIMIT_COUNT}`, undefined);
  }

  private rateWindow(node: ConditionAst, what: 'rate_limit' | 'budget'): { windowMs: number; windowText: string } | undefined {
    const problem = `bad ${what} window: expected a number and a unit s, m, h or d, e.g. 30s or 1m`;
    if (node.kind !== 'duration') return this.fail(node, problem, undefined);
    let windowMs: number;
    try {
      windowMs = parseDuration(node.text);
    } catch {
      return this.fail(node, problem, undefined);
    }
    if (windowMs <= 0) return this.fail(node, `bad ${what} window: it must be longer than zero`, undefined);
    return { windowMs, windowText: node.text };
  }

  private path(node: PathNode): PathRef | undefined {
    const { root, segments } = node;
    switch (root) {
      case 'agent':
        if (segments[0] === 'labels') return this.agentLabels(node);
        return this.fieldPath(node, AGENT_FIELDS, (field) => ({ kind: 'agent', field: field as AgentField }));
      case 'delegation':
        return this.fieldPath(node, DELEGATION_FIELDS, (field) => ({ kind: 'delegation', field: field as DelegationField }));
      case 'org':
        return this.orgPath(node);
      case 'tool':
        return this.fieldPath(node, TOOL_FIELDS, (field) => ({ kind: 'tool', field: field as ToolField }));
      case 'session':
        this.readsSession = true;
        return this.fieldPath(node, SESSION_FIELDS, (field) => ({ kind: 'session', field: field as SessionField }));
      case 'args':
      case 'context':
        if (segments.length === 0) return this.fail(node, `'${root}' needs a field name, e.g. ${root}.name`, undefined);
        if (root === 'args') this.argNames.add(segments[0]);
        this.readsRequest = true;
        return { kind: root, segments };
      default:
        return this.inputPath(node);
    }
  }

  /** `agent.labels`: the agent's labels, remembered beside the session's. */
  private agentLabels(node: PathNode): PathRef | undefined {
    if (node.segments.length > 1) return this.failAt(segmentOffset(node, 1), 'agent.labels has no fields (write agent.labels.has("name"))', undefined);
    this.readsSession = true;
    return { kind: 'agent-labels' };
  }

  /** `org.id`, `org.plan`, `org.usage.policy_checks`, `org.usage.agents`. */
  private orgPath(node: PathNode): PathRef | undefined {
    const expected = ORG_FIELDS.map((field) => `org.${field}`).join(', ');
    const [first, second] = node.segments;
    if (first === undefined) return this.fail(node, `'org' needs a field: ${expected}`, undefined);
    if (first === 'usage') {
      const usageFields = ORG_FIELDS.filter((field) => field.startsWith('usage.')).map((field) => `org.${field}`).join(', ');
      if (second === undefined) return this.fail(node, `'org.usage' needs a field: ${usageFields}`, undefined);
      if (!(ORG_FIELDS as readonly string[]).includes(`usage.${second}`)) {
        return this.failAt(segmentOffset(node, 1), `unknown org.usage field '${second}' (expected ${usageFields})`, undefined);
      }
      if (node.segments.length > 2) return this.failAt(segmentOffset(node, 2), `org.usage.${second} has no fields`, undefined);
      return { kind: 'org', field: `usage.${second}` as OrgField };
    }
    if (!(ORG_FIELDS as readonly string[]).includes(first)) return this.failAt(segmentOffset(node, 0), `unknown org field '${first}' (expected ${expected})`, undefined);
    if (second !== undefined) return this.failAt(segmentOffset(node, 1), `org.${first} has no fields`, undefined);
    return { kind: 'org', field: first as OrgField };
  }

  private inputPath(node: PathNode): PathRef | undefined {
    if (!(INPUT_FIELDS as readonly string[]).includes(node.root)) {
      return this.fail(node, `unknown variable '${node.root}' (expected one of ${ROOTS.join(', ')})`, undefined);
    }
    if (node.segments.length > 0) {
      return this.failAt(segmentOffset(node, 0), `'${node.root}' is a string and has no fields`, undefined);
    }
    return { kind: 'input', field: node.root as InputField };
  }

  private fieldPath(node: PathNode, fields: readonly string[], make: (field: string) => PathRef): PathRef | undefined {
    const expected = fields.map((field) => `${node.root}.${field}`).join(', ');
    if (node.segments.length === 0) return this.fail(node, `'${node.root}' needs a field: ${expected}`, undefined);
    const field = node.segments[0];
    if (!fields.includes(field)) {
      return this.failAt(segmentOffset(node, 0), `unknown ${node.root} field '${field}' (expected ${expected})`, undefined);
    }
    if (node.segments.length > 1) {
      return this.failAt(segmentOffset(node, 1), `${node.root}.${field} has no fields`, undefined);
    }
    return make(field);
  }

  /**
   * The offset in the condition of character `index` of a string literal's value (an escape takes
   * two characters there); null: the literal itself.
   */
  private stringValueOffset(node: ConditionAst, index: number | null): number {
    const span = spanOf(node);
    if (span === undefined) return 0;
    if (index === null) return span.start;
    let at = span.start + 1;
    for (let decoded = 0; decoded < index && at < span.end - 1; decoded++) at += this.text[at] === '\\' ? 2 : 1;
    return at;
  }

  private fail<T>(node: ConditionAst, message: string, fallback: T): T {
    return this.failAt(spanOf(node)?.start ?? 0, message, fallback);
  }

  private failAt<T>(offset: number, message: string, fallback: T): T {
    this.issues.push({ offset, message });
    return fallback;
  }
}

function isTrustTier(node: ConditionAst): boolean {
  return node.kind === 'path' && node.root === 'agent' && node.segments.length === 1 && node.segments[0] === 'trust_tier';
}

function segmentOffset(node: PathNode, index: number): number {
  const span = spanOf(node);
  return span?.segments?.[index] ?? span?.start ?? 0;
}

function describeNode(node: ConditionAst): string {
  switch (node.kind) {
    case 'string':
      return `the string ${JSON.stringify(node.value)}`;
    case 'number':
      return `the number ${node.value}`;
    case 'boolean':
      return String(node.value);
    case 'list':
      return 'a list';
    case 'duration':
      return `the duration ${node.text}`;
    case 'path':
      return `'${node.root}${node.segments.map((segment) => `.${segment}`).join('')}'`;
    case 'call':
      return `${node.name}(...)`;
    default:
      return 'a condition';
  }
}
