import { compilePolicies } from './compile-policies';
import { SlidingWindowLimiter } from './sliding-window-limiter';
import type { EvaluationTracer } from './evaluation-tracer';
import type { DecisionInput, Explanation, PolicyDefinition, RateLimiter } from './types';

const input: DecisionInput = {
  agent: { id: 'agent_1', name: 'bot', trust_tier: 'verified', tags: ['pii'], org: 'org_1' },
  action: 'write:/x',
  resource: '/x',
  plugin: 'http',
  function: 'write',
  args: { path: '/x', method: 'POST' },
  context: {},
  delegation: { depth: 1, chain: ['agent_1'] },
};

const defs: PolicyDefinition[] = [
  { name: 'files', match: { plugin: 'FilePlugin' }, rules: [{ condition: 'true', action: 'deny', reason: 'r' }] },
  {
    name: 'main',
    rules: [
      { name: 'ok', condition: 'agent.tags contains "pii"', action: 'allow', reason: 'tagged' },
      { condition: 'args.method == "GET"', action: 'deny', reason: 'no reads' },
      { name: 'stop', condition: 'args.path == "/x"', action: 'deny', reason: 'stopped' },
      { name: 'after', condition: 'true', action: 'deny', reason: 'never reached' },
    ],
  },
  { name: 'later', rules: [{ name: 'l', condition: 'true', action: 'allow', reason: 'r' }] },
];

describe('PolicySet.explain', () => {
  it('traces every rule tried and marks the rest not reached', () => {
    const explanation = compilePolicies(defs).explain(input, { limiter: new SlidingWindowLimiter(), nowMs: 0 }) as Explanation;
    expect(explanation).toEqual({
      decision: { effect: 'deny', policy: 'main', rule: 'stop', reason: 'stopped' },
      trace: [
        { policy: 'files', applicable: false, rules: [] },
        {
          policy: 'main',
          applicable: true,
          rules: [
            { rule: 'ok', action: 'allow', result: true },
            { rule: 'main#1', action: 'deny', result: false },
            { rule: 'stop', action: 'deny', result: true },
            { rule: 'after', action: 'deny', result: 'not-reached' },
          ],
        },
        { policy: 'later', applicable: true, rules: [{ rule: 'l', action: 'allow', result: 'not-reached' }] },
      ],
    });
  });

  it('gives the same decision as evaluate', () => {
    const set = compilePolicies(defs.map((policy) => (policy.name === 'main' ? { ...policy, rules: policy.rules.slice(0, 2) } : policy)));
    const env = { limiter: new SlidingWindowLimiter(), nowMs: 0 };
    expect((set.explain(input, env) as Explanation).decision).toBe(set.evaluate(input, env));
    expect((set.explain(input, env) as Explanation).decision).toMatchObject({ effect: 'allow', policy: 'main', rule: 'ok' });
  });

  it('reports the default deny of an allow list', () => {
    const set = compilePolicies([{ name: 'list', default: 'deny', rules: [{ condition: 'false', action: 'allow', reason: 'r' }] }]);
    const explanation = set.explain(input, { limiter: new SlidingWindowLimiter(), nowMs: 0 }) as Explanation;
    expect(explanation.decision.rule).toBe('list#default');
    expect(explanation.trace[0].rules).toEqual([{ rule: 'list#0', action: 'allow', result: false }]);
  });

  describe('with rate limits', () => {
    const rated: PolicyDefinition[] = [
      { name: 'rate', rules: [{ name: 'burst', condition: 'rate_limit(per_agent, 1, 1m)', action: 'deny', reason: 'slow down' }] },
    ];

    it('peeks without recording, and shows the limit consulted', () => {
      const limiter = new SlidingWindowLimiter();
      const set = compilePolicies(rated);
      const env = { limiter, nowMs: 0 };
      const before = set.explain(input, env) as Explanation;
      expect(before.decision.effect).toBe('allow');
      expect(before.trace[0].rules).toEqual([{ rule: 'burst', action: 'deny', result: false, rateLimit: { limit: '1/1m per_agent', retryAfterSeconds: 0 } }]);
      expect(set.evaluate(input, env)).toMatchObject({ effect: 'allow' });
      const after = set.explain(input, { limiter, nowMs: 15_000 }) as Explanation;
      expect(after.decision).toMatchObject({ effect: 'deny', rule: 'burst', rateLimit: { limit: '1/1m per_agent', retryAfterSeconds: 45 } });
      expect(after.trace[0].rules[0]).toEqual({ rule: 'burst', action: 'deny', result: true, rateLimit: { limit: '1/1m per_agent', retryAfterSeconds: 45 } });
      expect(limiter.size).toBe(1);
    });

    it('works with an asynchronous limiter', async () => {
      const inner = new SlidingWindowLimiter();
      const limiter: RateLimiter = {
        hit: (...args) => Promise.resolve(inner.hit(...args)),
        peek: (...args) => Promise.resolve(inner.peek(...args)),
      };
      const set = compilePolicies([...rated, ...defs]);
      await set.evaluate(input, { limiter, nowMs: 0 });
      const pending = set.explain(input, { limiter, nowMs: 1_000 });
      expect(pending).toBeInstanceOf(Promise);
      const explanation = await pending;
      expect(explanation.decision).toMatchObject({ rule: 'burst', rateLimit: { retryAfterSeconds: 59 } });
      expect(explanation.trace.map((policy) => policy.rules.map((rule) => rule.result))).toEqual([
        [true],
        [],
        ['not-reached', 'not-reached', 'not-reached', 'not-reached'],
        ['not-reached'],
      ]);
    });
  });

  describe('evaluate with a tracer', () => {
    function recordingTracer(heard: string[]): EvaluationTracer {
      return {
        policyEntered: (policy) => heard.push(`enter ${policy.name}`),
        ruleEvaluated: (rule, fired, rateLimit) => heard.push(`${rule.label} ${fired}${rateLimit === undefined ? '' : ` ${rateLimit.limit}`}`),
      };
    }

    it('hears every applicable policy entered and every rule evaluated, up to the decision', () => {
      const heard: string[] = [];
      const set = compilePolicies(defs);
      const env = { limiter: new SlidingWindowLimiter(), nowMs: 0 };
      expect(set.evaluate(input, env, undefined, recordingTracer(heard))).toBe(set.evaluate(input, env));
      expect(heard).toEqual(['enter main', 'ok true', 'main#1 false', 'stop true']);
    });

    it('hears rate-limited rules, across an asynchronous limiter answer, and records the hit', async () => {
      const heard: string[] = [];
      const inner = new SlidingWindowLimiter();
      const limiter: RateLimiter = { hit: (...args) => Promise.resolve(inner.hit(...args)), peek: (...args) => Promise.resolve(inner.peek(...args)) };
      const set = compilePolicies([{ name: 'rate', rules: [{ name: 'burst', condition: 'rate_limit(per_agent, 5, 1m)', action: 'deny', reason: 'r' }] }, ...defs]);
      await expect(set.evaluate(input, { limiter, nowMs: 0 }, undefined, recordingTracer(heard))).resolves.toMatchObject({ rule: 'stop' });
      expect(heard).toEqual(['enter rate', 'burst false 5/1m per_agent', 'enter main', 'ok true', 'main#1 false', 'stop true']);
      expect(inner.size).toBe(1);
    });
  });
});
