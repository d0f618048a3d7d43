import { compilePolicies } from './compile-policies';
import { SlidingWindowLimiter } from './sliding-window-limiter';
import type { AgentFacts, Decision, DecisionInput, EvaluationEnv, PolicyDefinition, RateLimiter, RuleDefinition } from './types';

function makeInput(overrides: Partial<Omit<DecisionInput, 'agent'>> & { agent?: Partial<AgentFacts> } = {}): DecisionInput {
  const { agent, ...rest } = overrides;
  return {
    agent: { id: 'agent_1', name: 'bot', trust_tier: 'verified', tags: [], org: 'org_1', ...agent },
    action: 'read:/x',
    resource: '/x',
    plugin: 'http',
    function: 'read',
    args: { path: '/x', method: 'GET' },
    context: {},
    delegation: { depth: 1, chain: ['agent_1'] },
    ...rest,
  };
}

const deny = (condition: string, name?: string): RuleDefinition => ({ ...(name ? { name } : {}), condition, action: 'deny', reason: `deny ${name ?? condition}` });
const allow = (condition: string, name?: string): RuleDefinition => ({ ...(name ? { name } : {}), condition, action: 'allow', reason: `allow ${name ?? condition}` });
const policy = (name: string, rules: RuleDefinition[], extra: Partial<PolicyDefinition> = {}): PolicyDefinition => ({ name, rules, ...extra });

function syncEnv(limiter: RateLimiter = new SlidingWindowLimiter(), nowMs = 0): EvaluationEnv {
  return { limiter, nowMs };
}

function decide(defs: PolicyDefinition[], input = makeInput()): Decision {
  const result = compilePolicies(defs).evaluate(input, syncEnv());
  if (result instanceof Promise) throw new Error('expected a synchronous decision');
  return result;
}

describe('PolicySet: deny overrides', () => {
  it('a later deny beats an earlier allow', () => {
    expect(decide([policy('a', [allow('true', 'ok')]), policy('b', [deny('true', 'no')])])).toEqual({
      effect: 'deny',
      policy: 'b',
      rule: 'no',
      reason: 'deny no',
    });
  });

  it('the first deny in policy order wins', () => {
    expect(decide([policy('a', [deny('false'), deny('true', 'first')]), policy('b', [deny('true', 'second')])]).rule).toBe('first');
  });

  it('a deny after an allow inside the same policy still wins', () => {
    expect(decide([policy('a', [allow('true', 'ok'), deny('true', 'no')])])).toMatchObject({ effect: 'deny', rule: 'no' });
  });

  it('allows when nothing denies, naming the first allow rule that fired', () => {
    const decision = decide([policy('a', [deny('false')]), policy('b', [allow('false', 'x'), allow('true', 'y'), allow('true', 'z')]), policy('c', [allow('true', 'w')])]);
    expect(decision).toEqual({ effect: 'allow', policy: 'b', rule: 'y', reason: 'allow y' });
  });

  it('allows with the first applicable policy and no rule when no rule fired', () => {
    const defs = [policy('files', [deny('true')], { match: { plugin: 'FilePlugin' } }), policy('a', [deny('false')]), policy('b', [deny('false')])];
    expect(decide(defs)).toEqual({ effect: 'allow', policy: 'a', rule: null, reason: 'allowed' });
  });

  it('allows as `default` when no policy applies', () => {
    expect(decide([policy('files', [deny('true')], { match: { plugin: 'FilePlugin' } })])).toEqual({
      effect: 'allow',
      policy: 'default',
      rule: null,
      reason: 'allowed: no policy applies',
    });
    expect(decide([])).toMatchObject({ policy: 'default', rule: null });
  });

  it('names unnamed rules <policy>#<0-based index>', () => {
    expect(decide([policy('p', [deny('false'), deny('true')])]).rule).toBe('p#1');
    expect(decide([policy('p', [allow('true')])]).rule).toBe('p#0');
  });

  it('shares frozen, pre-built decisions between evaluations', () => {
    const set = compilePolicies([policy('p', [deny('args.path == "/x"', 'r')])]);
    const first = set.evaluate(makeInput(), syncEnv());
    expect(set.evaluate(makeInput(), syncEnv())).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
  });
});

describe('PolicySet: default deny (allow lists)', () => {
  const allowList = (rules: RuleDefinition[]) => policy('list', rules, { default: 'deny' });

  it('denies when no allow rule fired', () => {
    expect(decide([allowList([allow('false', 'never')])])).toEqual({
      effect: 'deny',
      policy: 'list',
      rule: 'list#default',
      reason: 'No allow rule of policy list matched',
    });
    expect(decide([allowList([])]).rule).toBe('list#default');
  });

  it('allows when an allow rule fired', () => {
    expect(decide([allowList([allow('false'), allow('true', 'yes')])])).toMatchObject({ effect: 'allow', policy: 'list', rule: 'yes' });
  });

  it('still lets its deny rules win', () => {
    expect(decide([allowList([allow('true', 'yes'), deny('true', 'no')])])).toMatchObject({ effect: 'deny', rule: 'no' });
  });

  it('decides at the end of its policy, before later policies', () => {
    expect(decide([allowList([allow('false')]), policy('later', [deny('true', 'later-deny')])]).rule).toBe('list#default');
    expect(decide([policy('earlier', [deny('true', 'early')]), allowList([allow('false')])]).rule).toBe('early');
  });

  it('is judged per policy: an allow in another policy does not satisfy it', () => {
    expect(decide([policy('open', [allow('true', 'fine')]), allowList([allow('false')])]).rule).toBe('list#default');
  });

  it('does nothing when it does not apply', () => {
    expect(decide([policy('list', [], { default: 'deny', match: { plugin: 'Other' } })]).effect).toBe('allow');
  });
});

describe('PolicySet: matching', () => {
  const defs = [
    policy('files', [deny('true')], { match: { plugin: 'FilePlugin', function: 'Read*' } }),
    policy('writes', [deny('true')], { match: { action: 'write:*' } }),
    policy('everything', [deny('false')]),
    policy('empty-match', [deny('false')], { match: {} }),
    policy('star', [deny('false')], { match: { plugin: '*' } }),
    policy('admin', [deny('false')], { match: { plugin: 'http', function: '*', action: '*:/admin*' } }),
  ];
  const set = compilePolicies(defs);

  it.each<[string, string, string, string[]]>([
    ['FilePlugin', 'ReadFile', 'read:/a', ['files', 'everything', 'empty-match', 'star']],
    ['FilePlugin', 'WriteFile', 'write:/a', ['writes', 'everything', 'empty-match', 'star']],
    ['http', 'read', 'read:/admin/users', ['everything', 'empty-match', 'star', 'admin']],
    ['http', 'read', 'read:/public', ['everything', 'empty-match', 'star']],
    // Case never keeps a policy out: a deny cannot be evaded by writing a name in another case.
    ['fileplugin', 'readfile', 'read:/a', ['files', 'everything', 'empty-match', 'star']],
    ['HTTP', 'READ', 'READ:/Admin/users', ['everything', 'empty-match', 'star', 'admin']],
    ['FilePlugin', 'WriteFile', 'WRITE:/a', ['writes', 'everything', 'empty-match', 'star']],
  ])('%s %s %s', (plugin, fn, action, expected) => {
    const target = { plugin, function: fn, action };
    expect(set.applicable(target).map((p) => p.name)).toEqual(expected);
    const input = makeInput({ plugin, function: fn, action });
    expect(set.evaluate(input, syncEnv(), set.applicable(target))).toEqual(set.evaluate(input, syncEnv()));
  });

  it('exposes the compiled policies and their definitions', () => {
    expect(set.policies.map((p) => p.name)).toEqual(defs.map((d) => d.name));
    expect(set.get('writes')?.definition).toEqual(defs[1]);
    expect(set.get('nope')).toBeUndefined();
  });
});

describe('PolicySet: which args the policies read', () => {
  const set = compilePolicies([
    policy('none', [deny('agent.trust_tier < trusted')]),
    policy('line', [deny('args.path starts_with "/etc" or args.method == "DELETE"')]),
    policy('body', [deny('args.amount > 10 or args["x-y"].z == 1')]),
    policy('nested-path', [deny('args.path.x == 1')]),
    policy('rated', [deny('rate_limit(per_agent, 1, 1s)')]),
  ]);
  const [none, line, body, nestedPath] = set.policies;

  it('lists the top-level arg names per policy', () => {
    expect([...none.argNames]).toEqual([]);
    expect([...line.argNames]).toEqual(['path', 'method']);
    expect([...body.argNames]).toEqual(['amount', 'x-y']);
    expect([...nestedPath.argNames]).toEqual(['path']);
  });

  it('readsArgs is true when any applicable policy reads args', () => {
    expect(set.readsArgs([none])).toBe(false);
    expect(set.readsArgs([none, line])).toBe(true);
  });

  it('readsBodyArgs is true only for args beyond path and method', () => {
    expect(set.readsBodyArgs([none, line, nestedPath])).toBe(false);
    expect(set.readsBodyArgs([line, body])).toBe(true);
    expect(set.readsBodyArgs([])).toBe(false);
  });

  it('flags policies that use rate_limit', () => {
    expect(set.policies.map((p) => p.usesRateLimit)).toEqual([false, false, false, false, true]);
    expect(set.usesRateLimit).toBe(true);
  });
});

describe('PolicySet: require_approval holds', () => {
  const hold = (condition: string, name: string): RuleDefinition => ({ name, condition, action: 'require_approval', reason: `hold ${name}` });

  it('a deny after a hold wins: every policy is still evaluated', () => {
    expect(decide([policy('a', [hold('true', 'h')]), policy('b', [deny('true', 'no')])])).toEqual({ effect: 'deny', policy: 'b', rule: 'no', reason: 'deny no' });
  });

  it('a hold decides when nothing denies, naming every hold once a second one fired', () => {
    const decided = decide([policy('a', [hold('true', 'h1')]), policy('b', [allow('true', 'ok')]), policy('c', [hold('true', 'h2')])]);
    expect(decided).toMatchObject({ effect: 'deny', rule: 'h1', approval: expect.any(Object) });
    expect(decided.approvalHolds?.map((held) => held.rule)).toEqual(['h1', 'h2']);
    expect(decide([policy('a', [hold('true', 'h1')])]).approvalHolds).toBeUndefined();
  });

  it('a hold answers for a policy whose default is deny', () => {
    expect(decide([policy('a', [hold('true', 'h')], { default: 'deny' })])).toMatchObject({ rule: 'h', approval: expect.any(Object) });
  });

  it('a rate-limited hold waits for a later deny too', async () => {
    const limiter: RateLimiter = { hit: () => Promise.resolve(5), peek: () => Promise.resolve(5) };
    const set = compilePolicies([policy('a', [hold('rate_limit(per_agent, 1, 1m)', 'h')]), policy('b', [deny('true', 'no')])]);
    expect(await set.evaluate(makeInput(), syncEnv(limiter))).toMatchObject({ effect: 'deny', rule: 'no' });
    const alone = compilePolicies([policy('a', [hold('rate_limit(per_agent, 1, 1m)', 'h')])]);
    expect(await alone.evaluate(makeInput(), syncEnv(limiter))).toMatchObject({ rule: 'h', approval: expect.any(Object) });
  });
});
