import { compilePolicies } from './compile-policies';
import type { PolicySet } from './policy-set';
import { SlidingWindowLimiter } from './sliding-window-limiter';
import type { Decision, DecisionInput, PolicyDefinition, RateLimiter } from './types';

function makeInput(agentId = 'agent_1', action = 'write:/x', org: string | null = 'org_1'): DecisionInput {
  return {
    agent: { id: agentId, name: 'bot', trust_tier: 'verified', tags: [], ...(org === null ? {} : { org }) },
    action,
    resource: '/x',
    plugin: 'http',
    function: 'write',
    args: { path: '/x', method: 'POST' },
    context: {},
    delegation: { depth: 1, chain: [agentId] },
  };
}

/** Wraps the in-process limiter, recording keys; optionally answers with Promises like a Redis limiter. */
class TestLimiter implements RateLimiter {
  readonly hits: string[] = [];
  readonly peeks: string[] = [];
  private readonly inner = new SlidingWindowLimiter();

  constructor(private readonly asynchronous = false) {}

  hit(key: string, limit: number, windowMs: number, nowMs: number): number | Promise<number> {
    this.hits.push(key);
    return this.answer(this.inner.hit(key, limit, windowMs, nowMs));
  }

  peek(key: string, limit: number, windowMs: number, nowMs: number): number | Promise<number> {
    this.peeks.push(key);
    return this.answer(this.inner.peek(key, limit, windowMs, nowMs));
  }

  private answer(ms: number): number | Promise<number> {
    return this.asynchronous ? Promise.resolve(ms) : ms;
  }
}

const writeRate: PolicyDefinition = {
  name: 'write-rate',
  match: { action: 'write:*' },
  rules: [{ condition: 'rate_limit(per_agent, 2, 1m)', action: 'deny', reason: 'Too many writes' }],
};

function sync(result: Decision | Promise<Decision>): Decision {
  if (result instanceof Promise) throw new Error('expected a synchronous decision');
  return result;
}

describe('rate_limit with a synchronous limiter', () => {
  it('denies once the window is full, with the limit and retry-after, and stays synchronous', () => {
    const set = compilePolicies([writeRate], { namespace: 'org_1' });
    const env = { limiter: new SlidingWindowLimiter(), nowMs: 1_000 };
    expect(sync(set.evaluate(makeInput(), env)).effect).toBe('allow');
    expect(sync(set.evaluate(makeInput(), { ...env, nowMs: 21_000 })).effect).toBe('allow');
    expect(sync(set.evaluate(makeInput(), { ...env, nowMs: 31_000 }))).toEqual({
      effect: 'deny',
      policy: 'write-rate',
      rule: 'write-rate#0',
      reason: 'Too many writes',
      rateLimit: { limit: '2/1m per_agent', retryAfterSeconds: 30 },
    });
    expect(sync(set.evaluate(makeInput('agent_2'), { ...env, nowMs: 31_000 })).effect).toBe('allow');
    expect(sync(set.evaluate(makeInput(), { ...env, nowMs: 60_999 })).rateLimit).toEqual({ limit: '2/1m per_agent', retryAfterSeconds: 1 });
    expect(sync(set.evaluate(makeInput(), { ...env, nowMs: 61_000 })).effect).toBe('allow');
  });

  it('rounds retry-after up to whole seconds, at least 1', () => {
    const set = compilePolicies([{ ...writeRate, rules: [{ condition: 'rate_limit(global, 1, 1500s)', action: 'deny', reason: 'r' }] }]);
    const env = { limiter: new SlidingWindowLimiter(), nowMs: 0 };
    set.evaluate(makeInput(), env);
    expect(sync(set.evaluate(makeInput(), { ...env, nowMs: 1_499_001 })).rateLimit).toEqual({ limit: '1/1500s global', retryAfterSeconds: 1 });
    expect(sync(set.evaluate(makeInput(), { ...env, nowMs: 1_000 })).rateLimit?.retryAfterSeconds).toBe(1499);
  });

  it('keys counters per call site and scope partition', () => {
    const limiter = new TestLimiter();
    const defs: PolicyDefinition[] = [
      {
        name: 'a:b',
        rules: [
          { condition: 'args.x == 1', action: 'deny', reason: 'r' },
          {
            condition:
              'rate_limit(per_agent, 9, 1m) or rate_limit(per_org, 9, 1m) or rate_limit(per_action, 9, 1m) or rate_limit(global, 9, 1m)',
            action: 'deny',
            reason: 'r',
          },
        ],
      },
    ];
    compilePolicies(defs, { namespace: 'org 1' }).evaluate(makeInput(), { limiter, nowMs: 0 });
    compilePolicies(defs).evaluate(makeInput('agent_2', 'write:/y', null), { limiter, nowMs: 0 });
    expect(limiter.hits).toEqual([
      'rl:org%201:a%3Ab:1:0:per_agent:agent_1',
      'rl:org%201:a%3Ab:1:1:per_org:org_1',
      'rl:org%201:a%3Ab:1:2:per_action:write:/x',
      'rl:org%201:a%3Ab:1:3:global:',
      'rl:-:a%3Ab:1:0:per_agent:agent_2',
      'rl:-:a%3Ab:1:1:per_org:',
      'rl:-:a%3Ab:1:2:per_action:write:/y',
      'rl:-:a%3Ab:1:3:global:',
    ]);
  });

  it('uses the namespace as the org partition when the agent has none', () => {
    const limiter = new TestLimiter();
    const set = compilePolicies([{ name: 'p', rules: [{ condition: 'rate_limit(per_org, 9, 1m)', action: 'deny', reason: 'r' }] }], { namespace: 'org_9' });
    set.evaluate(makeInput('agent_1', 'write:/x', null), { limiter, nowMs: 0 });
    expect(limiter.hits).toEqual(['rl:org_9:p:0:0:per_org:org_9']);
  });

  it('does not consult the limiter when the condition short-circuits', () => {
    const limiter = new TestLimiter();
    const set = compilePolicies([
      { name: 'p', rules: [{ condition: 'args.path == "/nope" and rate_limit(per_agent, 1, 1m)', action: 'deny', reason: 'r' }] },
    ]);
    set.evaluate(makeInput(), { limiter, nowMs: 0 });
    expect(limiter.hits).toEqual([]);
  });

  it('attaches a trip only when a rate_limit returned true', () => {
    const set = compilePolicies([{ name: 'p', rules: [{ condition: 'args.path == "/x" or rate_limit(per_agent, 1, 1m)', action: 'deny', reason: 'r' }] }]);
    const decision = sync(set.evaluate(makeInput(), { limiter: new SlidingWindowLimiter(), nowMs: 0 }));
    expect(decision.effect).toBe('deny');
    expect(decision.rateLimit).toBeUndefined();
  });

  it('reports the soonest retry when several limits tripped', () => {
    const set = compilePolicies([
      { name: 'p', rules: [{ condition: 'rate_limit(per_agent, 1, 1h) and rate_limit(per_agent, 1, 1m)', action: 'deny', reason: 'r' }] },
    ]);
    const env = { limiter: new SlidingWindowLimiter(), nowMs: 0 };
    expect(sync(set.evaluate(makeInput(), env)).effect).toBe('allow');
    expect(sync(set.evaluate(makeInput(), env)).effect).toBe('allow');
    expect(sync(set.evaluate(makeInput(), { ...env, nowMs: 10_000 })).rateLimit).toEqual({ limit: '1/1m per_agent', retryAfterSeconds: 50 });
  });

  it('lets allow-list policies admit only while under a limit, denying by default after', () => {
    const set = compilePolicies([{ name: 'quota', default: 'deny', rules: [{ condition: 'not rate_limit(per_agent, 1, 1m)', action: 'allow', reason: 'under quota' }] }]);
    const env = { limiter: new SlidingWindowLimiter(), nowMs: 0 };
    expect(sync(set.evaluate(makeInput(), env))).toMatchObject({ effect: 'allow', rule: 'quota#0' });
    expect(sync(set.evaluate(makeInput(), env))).toEqual({ effect: 'deny', policy: 'quota', rule: 'quota#default', reason: 'No allow rule of policy quota matched' });
  });
});

describe('rate_limit with an asynchronous (Redis-like) limiter', () => {
  const defs: PolicyDefinition[] = [
    {
      name: 'first',
      rules: [
        { name: 'early-allow', condition: 'args.path == "/x"', action: 'allow', reason: 'ok' },
        { name: 'burst', condition: 'rate_limit(per_agent, 2, 10s) and args.method == "POST"', action: 'deny', reason: 'burst' },
        { name: 'late-allow', condition: 'not rate_limit(per_action, 3, 10s)', action: 'allow', reason: 'quota' },
        { name: 'deep', condition: 'args.path == "/deep"', action: 'deny', reason: 'deep' },
      ],
    },
    { name: 'list', default: 'deny', rules: [{ name: 'rated-allow', condition: 'not rate_limit(global, 4, 10s)', action: 'allow', reason: 'g' }] },
    { name: 'last', rules: [{ name: 'odd', condition: 'agent.id == "agent_3"', action: 'deny', reason: 'odd' }] },
  ];
  const scenario: [string, string, number][] = [
    ['agent_1', '/x', 0],
    ['agent_1', '/x', 1_000],
    ['agent_1', '/x', 2_000],
    ['agent_2', '/deep', 2_000],
    ['agent_3', '/x', 3_000],
    ['agent_2', '/y', 4_000],
    ['agent_2', '/y', 5_000],
    ['agent_4', '/z', 6_000],
    ['agent_1', '/x', 12_500],
    ['agent_3', '/deep', 30_000],
  ];

  async function run(set: PolicySet, limiter: RateLimiter): Promise<Decision[]> {
    const decisions: Decision[] = [];
    for (const [agent, path, nowMs] of scenario) {
      const input = { ...makeInput(agent), args: { path, method: 'POST' } };
      decisions.push(await set.evaluate(input, { limiter, nowMs }));
    }
    return decisions;
  }

  it('makes the same decisions as the synchronous limiter', async () => {
    const set = compilePolicies(defs, { namespace: 'org_1' });
    const expected = await run(set, new TestLimiter(false));
    const actual = await run(set, new TestLimiter(true));
    expect(actual).toEqual(expected);
    expect(expected.map((d) => d.rule)).toEqual([
      'early-allow',
      'early-allow',
      'burst',
      'deep',
      'odd',
      'rated-allow',
      'burst',
      'list#default',
      'early-allow',
      'deep',
    ]);
    expect(expected[2].rateLimit).toEqual({ limit: '2/10s per_agent', retryAfterSeconds: 8 });
  });

  it('returns a Promise only when the limiter did', async () => {
    const set = compilePolicies(defs);
    const input = makeInput();
    expect(set.evaluate(input, { limiter: new TestLimiter(false), nowMs: 0 })).not.toBeInstanceOf(Promise);
    const pending = set.evaluate(input, { limiter: new TestLimiter(true), nowMs: 0 });
    expect(pending).toBeInstanceOf(Promise);
    await expect(pending).resolves.toMatchObject({ effect: 'allow' });
  });

  it('stays synchronous for rules without rate_limit even with an asynchronous limiter', () => {
    const set = compilePolicies([{ name: 'p', rules: [{ condition: 'args.path == "/x"', action: 'deny', reason: 'r' }] }]);
    expect(set.evaluate(makeInput(), { limiter: new TestLimiter(true), nowMs: 0 })).toMatchObject({ effect: 'deny' });
  });

  it('carries the trip through the asynchronous path', async () => {
    const set = compilePolicies([writeRate]);
    const env = { limiter: new TestLimiter(true), nowMs: 0 };
    await set.evaluate(makeInput(), env);
    await set.evaluate(makeInput(), env);
    await expect(set.evaluate(makeInput(), env)).resolves.toMatchObject({ rateLimit: { limit: '2/1m per_agent', retryAfterSeconds: 60 } });
  });
});
