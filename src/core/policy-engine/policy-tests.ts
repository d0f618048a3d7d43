import { InMemoryBudgetLedger } from './budget-ledger';
import { PolicyLoadError } from './errors';
import { parseSource } from './loader';
import { isRecord, SourcePath, ValidationContext } from './policy-validator';
import type { PolicySet } from './policy-set';
import { SlidingWindowLimiter } from './sliding-window-limiter';
import type { AgentFacts, Decision, DecisionInput, DelegationFacts, OrgFacts, SessionFacts, ToolFacts } from './types';

/** What a test expects: `require_approval` is a deny that a person may lift (docs/policies.md "Tests in files"). */
export type ExpectedDecision = 'allow' | 'deny' | 'require_approval';

export interface PolicyTestExpectation {
  decision: ExpectedDecision;
  /** The deciding policy, when the test names one. */
  policy?: string;
  /** The deciding rule; null: no rule decided. Unchecked when absent. */
  rule?: string | null;
}

/** One test of a `*.test.yaml` file: an input and the decision it must get. */
export interface PolicyTestCase {
  name: string;
  input: DecisionInput;
  expect: PolicyTestExpectation;
  /** Where the test starts in its file (1-based). */
  line: number;
  column: number;
}

/** A parsed test file. */
export interface PolicyTestSuite {
  file: string;
  /** The policy files under test, as written (relative to the test file); empty: the policy files beside it. */
  policyFiles: string[];
  tests: PolicyTestCase[];
}

/** What one test got. */
export interface PolicyTestResult {
  test: PolicyTestCase;
  passed: boolean;
  /** What the policies decided. */
  actual: { decision: ExpectedDecision; policy: string; rule: string | null; reason: string };
  /** Why it failed, in words; absent when it passed. */
  failure?: string;
}

const SUITE_KEYS = ['policies', 'tests'];
const TEST_KEYS = ['name', 'input', 'expect'];
const INPUT_KEYS = ['agent', 'action', 'resource', 'plugin', 'function', 'args', 'context', 'delegation', 'org', 'tool', 'session'];
const SESSION_KEYS = ['id', 'labels', 'agent_labels', 'calls'];
const AGENT_KEYS = ['id', 'name', 'trust_tier', 'tags', 'org'];
const EXPECT_KEYS = ['decision', 'policy', 'rule'];
const DECISIONS: readonly ExpectedDecision[] = ['allow', 'deny', 'require_approval'];
/** A test file holds at most this many tests: each is evaluated at every stored-test run. */
export const MAX_TESTS_PER_FILE = 1000;

/**
 * Loads a test file (YAML or JSON): `policies` (optional list of files) and `tests`, each with
 * `name`, `input` and `expect`. Throws PolicyLoadError with every problem and its line and column.
 */
export function loadPolicyTests(source: string, file: string): PolicyTestSuite {
  const { value, context } = parseSource(source, file);
  const suite: PolicyTestSuite = { file, policyFiles: [], tests: [] };
  if (!isRecord(value)) {
    context.report([], "a test file must be a mapping with a 'tests' list", {});
    throw new PolicyLoadError(context.errors);
  }
  unknownKeys(value, SUITE_KEYS, 'a test file', context, []);
  suite.policyFiles = policyFiles(value.policies, context);
  if (!Array.isArray(value.tests)) context.report(Object.hasOwn(value, 'tests') ? ['tests'] : [], "'tests' must be a list of tests", {});
  else if (value.tests.length > MAX_TESTS_PER_FILE) context.report(['tests'], `at most ${MAX_TESTS_PER_FILE} tests a file (${value.tests.length} given)`, {});
  else {
    const names = new Set<string>();
    value.tests.forEach((item, index) => {
      const test = testCase(item, context, ['tests', index]);
      if (test === undefined) return;
      if (names.has(test.name)) context.report(['tests', index, 'name'], `duplicate test name '${test.name}'`, {});
      names.add(test.name);
      suite.tests.push(test);
    });
  }
  if (context.errors.length > 0) throw new PolicyLoadError([...context.errors].sort((a, b) => a.line - b.line || a.column - b.column));
  return suite;
}

/**
 * Runs every test against a policy set, each on a fresh rate-limit counter (a test never
 * depends on another's requests), at `nowMs`.
 */
export async function runPolicyTests(tests: readonly PolicyTestCase[], set: PolicySet, nowMs = Date.now()): Promise<PolicyTestResult[]> {
  const results: PolicyTestResult[] = [];
  for (const test of tests) {
    const decided = await set.evaluate(test.input, { limiter: new SlidingWindowLimiter({ maxKeys: 1000 }), nowMs, budgets: new InMemoryBudgetLedger({ maxKeys: 1000 }) });
    results.push(judge(test, decided));
  }
  return results;
}

function judge(test: PolicyTestCase, decided: Decision): PolicyTestResult {
  const actual = { decision: outcomeOf(decided), policy: decided.policy, rule: decided.rule, reason: decided.reason };
  const { expect } = test;
  const problems: string[] = [];
  if (actual.decision !== expect.decision) problems.push(`expected ${expect.decision}`);
  if (expect.policy !== undefined && actual.policy !== expect.policy) problems.push(`expected policy ${expect.policy}`);
  if (expect.rule !== undefined && actual.rule !== expect.rule) problems.push(`expected rule ${expect.rule ?? '(none)'}`);
  if (problems.length === 0) return { test, passed: true, actual };
  const got = `got ${actual.decision} by policy ${actual.policy}, rule ${actual.rule ?? '(none)'}: ${actual.reason}`;
  return { test, passed: false, actual, failure: `${problems.join(', ')}; ${got}` };
}

function outcomeOf(decided: Decision): ExpectedDecision {
  if (decided.effect === 'allow') return 'allow';
  return decided.approval !== undefined ? 'require_approval' : 'deny';
}

function policyFiles(value: unknown, context: ValidationContext): string[] {
  if (value === undefined) return [];
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || !list.every((item) => typeof item === 'string' && item.trim() !== '')) {
    context.report(['policies'], "'policies' must be a file name or a list of file names", {});
    return [];
  }
  return list as string[];
}

function testCase(value: unknown, context: ValidationContext, path: SourcePath): PolicyTestCase | undefined {
  const { line, column } = context.position(path);
  if (!isRecord(value)) {
    context.report(path, 'a test must be a mapping with name, input and expect', {});
    return undefined;
  }
  const before = context.errors.length;
  unknownKeys(value, TEST_KEYS, 'a test', context, path);
  const name = value.name;
  if (typeof name !== 'string' || name.trim() === '') context.report(Object.hasOwn(value, 'name') ? [...path, 'name'] : path, "a test needs a 'name' (a non-empty string)", {});
  const input = decisionInput(value.input, context, [...path, 'input'], Object.hasOwn(value, 'input'));
  const expect = expectation(value.expect, context, [...path, 'expect'], Object.hasOwn(value, 'expect'));
  if (context.errors.length > before || input === undefined || expect === undefined) return undefined;
  return { name: name as string, input, expect, line, column };
}

function decisionInput(value: unknown, context: ValidationContext, path: SourcePath, present: boolean): DecisionInput | undefined {
  if (!isRecord(value)) {
    context.report(present ? path : path.slice(0, -1), "a test needs an 'input' mapping (agent, action, args, ...)", {});
    return undefined;
  }
  unknownKeys(value, INPUT_KEYS, 'input', context, path);
  const input: DecisionInput = {
    agent: agentFacts(value.agent, context, [...path, 'agent']),
    action: text(value, 'action', context, path),
    resource: text(value, 'resource', context, path),
    plugin: text(value, 'plugin', context, path),
    function: text(value, 'function', context, path),
    args: mapping(value, 'args', context, path),
    context: mapping(value, 'context', context, path),
    delegation: delegationFacts(value.delegation, context, [...path, 'delegation']),
  };
  // org and tool are checked by what conditions read of them; a test states them as a request would carry them.
  if (value.org !== undefined) input.org = mapping(value, 'org', context, path) as unknown as OrgFacts;
  if (value.tool !== undefined) input.tool = mapping(value, 'tool', context, path) as unknown as ToolFacts;
  if (value.session !== undefined) input.session = sessionFacts(value.session, context, [...path, 'session']);
  return input;
}

/** `session: {id, labels, agent_labels, calls}`: what the session remembers, as the decision core supplies it (docs/policies.md "Sessions"). */
function sessionFacts(value: unknown, context: ValidationContext, path: SourcePath): SessionFacts {
  const facts: SessionFacts = { id: '', labels: [], agent_labels: [], calls: {} };
  if (!isRecord(value)) {
    context.report(path, "'session' must be a mapping (id, labels, agent_labels, calls)", {});
    return facts;
  }
  unknownKeys(value, SESSION_KEYS, 'session', context, path);
  facts.id = text(value, 'id', context, path);
  for (const key of ['labels', 'agent_labels'] as const) {
    const labels = value[key] ?? [];
    if (Array.isArray(labels) && labels.every((label) => typeof label === 'string')) facts[key] = labels as string[];
    else context.report([...path, key], `'${key}' must be a list of label names`, {});
  }
  const calls = value.calls ?? {};
  if (isRecord(calls) && Object.values(calls).every((count) => typeof count === 'number' && Number.isSafeInteger(count) && count > 0)) facts.calls = calls as Record<string, number>;
  else context.report([...path, 'calls'], "'calls' must map actions to how often the session made them", {});
  return facts;
}

function agentFacts(value: unknown, context: ValidationContext, path: SourcePath): AgentFacts {
  if (value === undefined) return { id: '', name: '', trust_tier: 'unverified', tags: [] };
  if (!isRecord(value)) {
    context.report(path, "'agent' must be a mapping (id, name, trust_tier, tags, org)", {});
    return { id: '', name: '', trust_tier: 'unverified', tags: [] };
  }
  unknownKeys(value, AGENT_KEYS, 'agent', context, path);
  const tags = value.tags ?? [];
  if (!Array.isArray(tags) || !tags.every((tag) => typeof tag === 'string')) context.report([...path, 'tags'], "'tags' must be a list of strings", {});
  const facts: AgentFacts = {
    id: text(value, 'id', context, path),
    name: text(value, 'name', context, path),
    trust_tier: text(value, 'trust_tier', context, path) || 'unverified',
    tags: Array.isArray(tags) ? tags.filter((tag): tag is string => typeof tag === 'string') : [],
  };
  if (value.org !== undefined) facts.org = text(value, 'org', context, path);
  return facts;
}

function delegationFacts(value: unknown, context: ValidationContext, path: SourcePath): DelegationFacts {
  if (value === undefined) return { depth: 1, chain: [] };
  const chain = isRecord(value) ? value.chain : undefined;
  if (!isRecord(value) || (chain !== undefined && (!Array.isArray(chain) || !chain.every((id) => typeof id === 'string')))) {
    context.report(path, "'delegation' must be a mapping with 'chain', a list of agent ids", {});
    return { depth: 1, chain: [] };
  }
  const ids = (chain as string[] | undefined) ?? [];
  return { depth: typeof value.depth === 'number' ? value.depth : ids.length || 1, chain: ids };
}

function expectation(value: unknown, context: ValidationContext, path: SourcePath, present: boolean): PolicyTestExpectation | undefined {
  if (!isRecord(value)) {
    context.report(present ? path : path.slice(0, -1), "a test needs an 'expect' mapping (decision, and optionally policy and rule)", {});
    return undefined;
  }
  unknownKeys(value, EXPECT_KEYS, 'expect', context, path);
  const decision = value.decision;
  if (!DECISIONS.includes(decision as ExpectedDecision)) {
    context.report(Object.hasOwn(value, 'decision') ? [...path, 'decision'] : path, `'decision' must be one of ${DECISIONS.join(', ')}`, {});
    return undefined;
  }
  const expected: PolicyTestExpectation = { decision: decision as ExpectedDecision };
  if (value.policy !== undefined) expected.policy = text(value, 'policy', context, path);
  if (Object.hasOwn(value, 'rule')) {
    if (value.rule !== null && typeof value.rule !== 'string') context.report([...path, 'rule'], "'rule' must be a rule name, or null for none", {});
    expected.rule = typeof value.rule === 'string' ? value.rule : null;
  }
  return expected;
}

function text(value: Record<string, unknown>, key: string, context: ValidationContext, path: SourcePath): string {
  const field = Object.hasOwn(value, key) ? value[key] : undefined;
  if (field === undefined) return '';
  if (typeof field !== 'string') {
    context.report([...path, key], `'${key}' must be a string`, {});
    return '';
  }
  return field;
}

function mapping(value: Record<string, unknown>, key: string, context: ValidationContext, path: SourcePath): Record<string, unknown> {
  const field = Object.hasOwn(value, key) ? value[key] : undefined;
  if (field === undefined) return {};
  if (!isRecord(field)) {
    context.report([...path, key], `'${key}' must be a mapping`, {});
    return {};
  }
  return field;
}

function unknownKeys(value: Record<string, unknown>, known: readonly string[], what: string, context: ValidationContext, path: SourcePath): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) context.report([...path, key], `unknown key '${key}' in ${what} (expected ${known.join(', ')})`, {}, { key: true });
  }
}
