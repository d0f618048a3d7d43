import fc from 'fast-check';
import { compilePolicies } from './compile-policies';
import type { PolicySet } from './policy-set';
import { SlidingWindowLimiter } from './sliding-window-limiter';
import { TIER_NAMES } from './tiers';
import type { Decision, DecisionInput, EvaluationEnv, Explanation, PolicyDefinition, RateLimiter, RuleDefinition } from './types';

// Small vocabularies, so that generated globs and conditions often hit the generated inputs.
const PLUGINS = ['http', 'FilePlugin', 'db'];
const FUNCTIONS = ['Read', 'ReadFile', 'Write', 'query'];
const ACTIONS = ['read:/x', 'write:/admin/users', 'delete:/tmp/a', 'query:db'];
const TAGS = ['pii', 'admin', 'sandbox'];
const PATHS = ['/etc/passwd', '/tmp/a', '/home/u/.ssh/id', '/x/../y', '/x'];
const TIERS = [...TIER_NAMES, 'unknown-tier'];

const quoted = (text: string) => JSON.stringify(text);

const leaf: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(fc.constantFrom('==', '!=', '<', '<=', '>', '>='), fc.constantFrom(...TIER_NAMES)).map(([op, tier]) => `agent.trust_tier ${op} ${quoted(tier)}`),
  fc.constantFrom(...TAGS).map((tag) => `agent.tags contains ${quoted(tag)}`),
  fc.constantFrom('/etc', '/tmp/', '/home', '/').map((prefix) => `args.path starts_with ${quoted(prefix)}`),
  fc.constantFrom('..', 'ssh', 'x').map((part) => `args.path contains ${quoted(part)}`),
  fc.constantFrom('true', 'false'),
);

const rateLimit: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom('per_agent', 'per_action', 'global'), fc.integer({ min: 1, max: 3 }), fc.constantFrom('10s', '1m'))
  .map(([scope, count, window]) => `rate_limit(${scope}, ${count}, ${window})`);

function conditionOf(withRateLimits: boolean): fc.Arbitrary<string> {
  const leaves = withRateLimits ? fc.oneof({ weight: 4, arbitrary: leaf }, { weight: 1, arbitrary: rateLimit }) : leaf;
  return fc.letrec<{ condition: string }>((tie) => ({
    condition: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leaves,
      fc.tuple(tie('condition'), fc.constantFrom('and', 'or'), tie('condition')).map(([left, op, right]) => `(${left}) ${op} (${right})`),
      tie('condition').map((operand) => `not (${operand})`),
    ),
  })).condition;
}

const matchGlobs = fc.record(
  {
    plugin: fc.constantFrom('*', 'http', 'File*', '*Plugin', 'db'),
    function: fc.constantFrom('*', 'Read*', 'Write', '*e*'),
    action: fc.constantFrom('*', 'read:*', 'write:*', '*:/admin*', 'delete:*'),
  },
  { requiredKeys: [] },
);

function policySet(withRateLimits: boolean): fc.Arbitrary<PolicyDefinition[]> {
  const rule: fc.Arbitrary<RuleDefinition> = fc.record({
    condition: conditionOf(withRateLimits),
    action: fc.constantFrom('allow' as const, 'deny' as const),
    reason: fc.constant('generated'),
  });
  const policy = fc.record(
    { match: matchGlobs, default: fc.constantFrom('allow' as const, 'deny' as const), rules: fc.array(rule, { minLength: 1, maxLength: 4 }) },
    { requiredKeys: ['rules'] },
  );
  return fc.array(policy, { minLength: 1, maxLength: 6 }).map((policies) => policies.map((definition, index) => ({ name: `p${index}`, ...definition })));
}

const decisionInput: fc.Arbitrary<DecisionInput> = fc
  .record({
    agentId: fc.constantFrom('agent_1', 'agent_2'),
    tier: fc.constantFrom(...TIERS),
    tags: fc.subarray(TAGS),
    plugin: fc.constantFrom(...PLUGINS),
    fn: fc.constantFrom(...FUNCTIONS),
    action: fc.constantFrom(...ACTIONS),
    path: fc.option(fc.constantFrom(...PATHS), { nil: undefined }),
  })
  .map(({ agentId, tier, tags, plugin, fn, action, path }) => ({
    agent: { id: agentId, name: agentId, trust_tier: tier, tags, org: 'org_1' },
    action,
    resource: action.slice(action.indexOf(':') + 1),
    plugin,
    function: fn,
    args: path === undefined ? {} : { path },
    context: {},
    delegation: { depth: 1, chain: [agentId] },
  }));

/** The in-process limiter behind Promises, as the Redis limiter answers. */
function promising(limiter: RateLimiter): RateLimiter {
  return {
    hit: (...args) => Promise.resolve(limiter.hit(...args)),
    peek: (...args) => Promise.resolve(limiter.peek(...args)),
  };
}

const outcome = (decision: Decision) => ({ effect: decision.effect, policy: decision.policy, rule: decision.rule, rateLimit: decision.rateLimit });

/** What the trace must show of the decision it explains. */
function expectTraceConsistent(set: PolicySet, input: DecisionInput, explanation: Explanation): void {
  expect(explanation.trace.map((policy) => [policy.policy, policy.applicable])).toEqual(set.policies.map((policy) => [policy.name, policy.matches(input)]));
  const results = explanation.trace.flatMap((policy) => policy.rules);
  const reached = results.filter((rule) => rule.result !== 'not-reached');
  // Everything before the decision was tried, nothing after it.
  expect(results.slice(0, reached.length)).toEqual(reached);
  const { decision } = explanation;
  if (decision.effect === 'allow') expect(reached).toHaveLength(results.length);
  if (decision.effect === 'deny' && decision.rule !== null && !decision.rule.endsWith('#default')) {
    expect(reached[reached.length - 1]).toMatchObject({ rule: decision.rule, action: 'deny', result: true });
  }
}

/** Explains, then enforces, each input in turn (a second apart): the dry run must predict the decision. */
async function compareOver(definitions: PolicyDefinition[], inputs: DecisionInput[], asyncLimiter: boolean): Promise<void> {
  const set = compilePolicies(definitions);
  const inner = new SlidingWindowLimiter();
  const limiter = asyncLimiter ? promising(inner) : inner;
  for (const [index, input] of inputs.entries()) {
    const env: EvaluationEnv = { limiter, nowMs: index * 1_000 };
    const explanation = await set.explain(input, env);
    const decision = await set.evaluate(input, env);
    expect(outcome(explanation.decision)).toEqual(outcome(decision));
    expectTraceConsistent(set, input, explanation);
  }
}

describe('traced (explain) and untraced (evaluate) evaluation', () => {
  it('decide the same effect, policy and rule over generated policy sets and inputs', async () => {
    await fc.assert(
      fc.asyncProperty(policySet(false), fc.array(decisionInput, { minLength: 1, maxLength: 8 }), (definitions, inputs) =>
        compareOver(definitions, inputs, false),
      ),
      { numRuns: 300 },
    );
  });

  it('stay the same with rate limits, the dry run peeking where enforcement records', async () => {
    await fc.assert(
      fc.asyncProperty(policySet(true), fc.array(decisionInput, { minLength: 1, maxLength: 12 }), fc.boolean(), (definitions, inputs, asyncLimiter) =>
        compareOver(definitions, inputs, asyncLimiter),
      ),
      { numRuns: 200 },
    );
  });

  it('explain records nothing: the limiter is consulted but never charged', async () => {
    await fc.assert(
      fc.asyncProperty(policySet(true), fc.array(decisionInput, { minLength: 1, maxLength: 8 }), async (definitions, inputs) => {
        const set = compilePolicies(definitions);
        const limiter = new SlidingWindowLimiter();
        for (const input of inputs) await set.explain(input, { limiter, nowMs: 0 });
        expect(limiter.size).toBe(0);
      }),
      { numRuns: 100 },
    );
  });
});
