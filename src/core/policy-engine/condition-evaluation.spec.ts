import { compilePolicies } from './compile-policies';
import { SlidingWindowLimiter } from './sliding-window-limiter';
import type { AgentFacts, Decision, DecisionInput } from './types';

function makeInput(agent: Partial<AgentFacts> = {}, args?: Record<string, unknown>): DecisionInput {
  return {
    agent: { id: 'agent_1', name: 'bot', trust_tier: 'verified', tags: ['pii', 'beta'], org: 'org_1', ...agent },
    action: 'read:/files/a.txt',
    resource: '/files/a.txt',
    plugin: 'http',
    function: 'read',
    args: args ?? {
      path: '/files/a.txt',
      method: 'GET',
      limit: '25',
      count: 7,
      ratio: 0.5,
      flag: true,
      nothing: null,
      nested: { deep: { value: 'x' } },
      list: ['a', 2, '3'],
      'x-y': 'dash',
    },
    context: { region: 'eu', hour: 14, min_tier: 'trusted', allowed: ['standard', 'trusted'] },
    delegation: { depth: 2, chain: ['agent_0', 'agent_1'] },
  };
}

/** True when the condition holds: it is the only rule, a deny. */
function holds(condition: string, input: DecisionInput = makeInput()): boolean {
  const set = compilePolicies([{ name: 'p', rules: [{ condition, action: 'deny', reason: 'r' }] }]);
  const decision = set.evaluate(input, { limiter: new SlidingWindowLimiter(), nowMs: 0 }) as Decision;
  return decision.effect === 'deny';
}

describe('conditions: equality', () => {
  it.each<[string, boolean]>([
    ['action == "read:/files/a.txt"', true],
    ['args.method == "GET"', true],
    ['args.method == "get"', false],
    ['args.method == \'GET\'', true],
    ['args.count == 7', true],
    ['args.count == "7"', true],
    ['args.count == "7.0"', true],
    ['args.limit == 25', true],
    ['args.limit == 25.0', true],
    ['25 == args.limit', true],
    ['args.limit == "25.0"', false],
    ['args.method == 0', false],
    ['args.ratio == 0.5', true],
    ['args.flag == true', true],
    ['args.flag == "true"', false],
    ['args.flag == 1', false],
    ['args.missing == "x"', false],
    ['args.missing == args.other', false],
    ['args.nothing == args.nothing', true],
    ['args.list == ["a", 2, "3"]', true],
    ['args.list == ["a", "2", 3]', true],
    ['args.list == ["a"]', false],
    ['args.method != "GET"', false],
    ['args.count != 8', true],
    ['args.missing != "x"', true],
    ['args.limit != 25', false],
  ])('%s → %s', (condition, expected) => {
    expect(holds(condition)).toBe(expected);
  });
});

describe('conditions: ordering', () => {
  it.each<[string, boolean]>([
    ['args.count > 5', true],
    ['args.count >= 7', true],
    ['args.count < 7', false],
    ['args.count <= 7', true],
    ['args.count > -1', true],
    ['args.ratio > 0.25', true],
    ['args.limit > 20', true],
    ['args.limit < 100', true],
    ['100 > args.limit', true],
    ['args.limit > "3"', false],
    ['args.method < "H"', true],
    ['args.missing < 5', false],
    ['args.missing >= 5', false],
    // A present value of the wrong kind fires a deny rule (docs/policies.md "Values of the wrong type").
    ['args.flag > 0', true],
    ['args.path > 1', true],
    ['args.list > 1', true],
    ['delegation.depth >= 2', true],
    ['context.hour < 9 or context.hour >= 18', false],
  ])('%s → %s', (condition, expected) => {
    expect(holds(condition)).toBe(expected);
  });
});

describe('conditions: string and list operators', () => {
  it.each<[string, boolean]>([
    ['args.path starts_with "/files"', true],
    ['args.path starts_with "/etc"', false],
    ['args.path ends_with ".txt"', true],
    ['args.count starts_with "7"', true],
    ['args.missing starts_with ""', false],
    ['"/files/a.txt/more" starts_with args.path', true],
    ['args.path contains "files"', true],
    ['args.path contains ".."', false],
    ['agent.tags contains "pii"', true],
    ['agent.tags contains "nope"', false],
    ['args.list contains 3', true],
    ['args.list contains "2"', true],
    ['args.list contains "a"', true],
    ['args.list contains "b"', false],
    ['args.count contains 7', true],
    ['args.missing contains "a"', false],
    ['delegation.chain contains "agent_0"', true],
    ['args.method in ["GET", "HEAD"]', true],
    ['args.method in ["POST"]', false],
    ['args.method in []', false],
    ['"pii" in agent.tags', true],
    ['"x" in agent.tags', false],
    ['args.count in [1, 7]', true],
    ['args.count in ["7"]', true],
    ['args.limit in [25]', true],
    ['args.limit in ["25.0"]', false],
    ['args.missing in ["a"]', false],
    ['"files" in args.path', true],
    ['args.flag in [true]', true],
    ['args.flag in ["true"]', false],
    ['agent.org in ["org_1", "org_2"]', true],
    ['args.method not in ["POST"]', true],
  ])('%s → %s', (condition, expected) => {
    expect(holds(condition)).toBe(expected);
  });
});

describe('conditions: exists, matches, paths', () => {
  it.each<[string, boolean]>([
    ['exists(args.path)', true],
    ['exists(args.missing)', false],
    ['exists(args.nothing)', true],
    ['exists(agent.org)', true],
    ['exists(args.nested.deep.value)', true],
    ['exists(args.nested.nope.value)', false],
    ['not exists(context.absent)', true],
    ['args.path matches "^/files/[a-z]+\\\\.txt$"', true],
    ['args.method matches "^get$"', false],
    ['args.count matches "7"', true],
    ['args.missing matches ".*"', false],
    ['args["x-y"] == "dash"', true],
    ["args['x-y'] == 'dash'", true],
    ['args.nested.deep.value == "x"', true],
    ['args["nested"]["deep"].value == "x"', true],
    ['args.list[0] == "a"', true],
    ['args.list[1] == 2', true],
    ['args.list.length == 3', true],
    ['context.region == "eu"', true],
    ['resource == "/files/a.txt"', true],
    ['plugin == "http" and function == "read"', true],
    ['agent.name == "bot" and agent.id == "agent_1"', true],
    ['delegation.chain == ["agent_0", "agent_1"]', true],
  ])('%s → %s', (condition, expected) => {
    expect(holds(condition)).toBe(expected);
  });

  it('reads no fields of the agent beyond the five allowed', () => {
    const input = makeInput();
    (input.agent as unknown as Record<string, unknown>).secret = 'x';
    expect(() => holds('agent.secret == "x"', input)).toThrow("unknown agent field 'secret'");
  });
});

describe('conditions: prototype keys are missing keys', () => {
  it.each<[string]>([
    ['exists(args.__proto__)'],
    ['exists(args.constructor)'],
    ['exists(args.toString)'],
    ['exists(args.hasOwnProperty)'],
    ['exists(args["__proto__"])'],
    ['exists(context.constructor)'],
    ['exists(args.nested.constructor)'],
    ['exists(args.nested.deep.__proto__)'],
    ['exists(args.path.length)'],
    ['exists(args.list.map)'],
    ['args.constructor == args.constructor'],
    ['args.__proto__ != args.__proto__ and false'],
  ])('%s is false', (condition) => {
    expect(holds(condition)).toBe(false);
  });

  it('still reads an own key named __proto__ (as JSON.parse makes it)', () => {
    const args = JSON.parse('{"__proto__": 5, "constructor": "c"}') as Record<string, unknown>;
    expect(holds('args.__proto__ == 5', makeInput({}, args))).toBe(true);
    expect(holds('args.constructor == "c"', makeInput({}, args))).toBe(true);
  });

  it('treats an args object without prototype like any other', () => {
    const args = Object.assign(Object.create(null) as Record<string, unknown>, { path: '/x' });
    expect(holds('args.path == "/x" and not exists(args.toString)', makeInput({}, args))).toBe(true);
  });
});

describe('conditions: boolean positions and logic', () => {
  it.each<[string, boolean]>([
    ['args.flag', true],
    ['args.method', false],
    ['args.missing', false],
    ['not args.missing', true],
    ['true', true],
    ['false', false],
    ['true and false', false],
    ['true or false', true],
    ['not true', false],
    ['false or not false', true],
    ['(args.count > 1) == true', true],
    ['(args.count > 100) == false', true],
    ['args.count > 100 or args.count < 10 and args.flag', true],
    ['(args.count > 100 or args.count < 10) and not args.flag', false],
  ])('%s → %s', (condition, expected) => {
    expect(holds(condition)).toBe(expected);
  });
});

describe('conditions: trust tiers', () => {
  it.each<[string, string, boolean]>([
    ['verified', 'agent.trust_tier == verified', true],
    ['verified', 'agent.trust_tier == "standard"', true],
    ['verified', 'agent.trust_tier == "trusted"', false],
    ['verified', 'agent.trust_tier < trusted', true],
    ['verified', 'agent.trust_tier <= "verified"', true],
    ['verified', 'agent.trust_tier > "untrusted"', true],
    ['verified', 'agent.trust_tier >= elevated', false],
    ['verified', 'agent.trust_tier != privileged', true],
    ['verified', '"trusted" > agent.trust_tier', true],
    ['verified', 'trusted <= agent.trust_tier', false],
    ['verified', 'agent.trust_tier in ["standard", "trusted"]', true],
    ['verified', 'agent.trust_tier in ["trusted", "privileged"]', false],
    ['verified', 'agent.trust_tier >= context.min_tier', false],
    ['verified', 'agent.trust_tier in context.allowed', true],
    ['verified', 'agent.trust_tier == context.missing', false],
    ['verified', 'agent.trust_tier != context.missing', true],
    ['untrusted', 'agent.trust_tier == "unverified"', true],
    ['untrusted', 'agent.trust_tier == sandboxed', true],
    ['untrusted', 'agent.trust_tier == restricted', true],
    ['untrusted', 'agent.trust_tier < verified', true],
    ['sandboxed', 'agent.trust_tier <= untrusted', true],
    ['standard', 'agent.trust_tier == "verified"', true],
    ['elevated', 'agent.trust_tier == trusted', true],
    ['elevated', 'agent.trust_tier >= "trusted"', true],
    ['privileged', 'agent.trust_tier > trusted', true],
    ['privileged', 'agent.trust_tier >= context.min_tier', true],
    ['ghost', 'agent.trust_tier < privileged', false],
    ['ghost', 'agent.trust_tier >= unverified', false],
    ['ghost', 'agent.trust_tier == unverified', false],
    ['ghost', 'agent.trust_tier != trusted', true],
    ['ghost', 'agent.trust_tier in ["unverified", "verified", "trusted", "privileged"]', false],
  ])('tier %s: %s → %s', (tier, condition, expected) => {
    expect(holds(condition, makeInput({ trust_tier: tier }))).toBe(expected);
  });

  it('compares agent.trust_tier as a plain string for word operators', () => {
    expect(holds('agent.trust_tier starts_with "ver"')).toBe(true);
  });
});

describe('conditions: values of the wrong type never let a request through', () => {
  function decide(rules: Array<{ condition: string; action: 'deny' | 'allow' }>, args: Record<string, unknown>, defaultDeny = false): string {
    const set = compilePolicies([{ name: 'p', default: defaultDeny ? 'deny' : 'allow', rules: rules.map((rule) => ({ ...rule, reason: 'r' })) }]);
    return (set.evaluate(makeInput({}, args), { limiter: new SlidingWindowLimiter(), nowMs: 0 }) as Decision).effect;
  }

  it.each<[string, unknown, string]>([
    ['a number', 5000, 'deny'],
    ['a small number', 50, 'allow'],
    ['a numeric string', '5000', 'deny'],
    ['a list', [5000], 'deny'],
    ['an object', { value: 5000 }, 'deny'],
    ['a number with trailing text', '5000abc', 'deny'],
    ['a boolean', true, 'deny'],
    ['null', null, 'deny'],
  ])('a deny rule on args.amount > 100 meets %s: %s', (_what, amount, expected) => {
    expect(decide([{ condition: 'args.amount > 100', action: 'deny' }], { amount })).toBe(expected);
    // Under not, the mismatch still reads the way that denies.
    expect(decide([{ condition: 'not (args.amount <= 100)', action: 'deny' }], { amount })).toBe(expected);
  });

  it('keeps a missing value missing: no field, no denial', () => {
    expect(decide([{ condition: 'args.amount > 100', action: 'deny' }], {})).toBe('allow');
  });

  it('never lets a mismatch grant: an allow rule does not fire on it', () => {
    const allowSmall = [{ condition: 'args.amount <= 100', action: 'allow' as const }];
    expect(decide(allowSmall, { amount: 50 }, true)).toBe('allow');
    expect(decide(allowSmall, { amount: [50] }, true)).toBe('deny');
    expect(decide([{ condition: 'not (args.amount > 100)', action: 'allow' }], { amount: [5000] }, true)).toBe('deny');
  });

  it.each<[string, Record<string, unknown>]>([
    ['args.path starts_with "/etc"', { path: ['/etc/passwd'] }],
    ['args.currency != "usd"', { currency: ['usd'] }],
    ['args.mode == "admin"', { mode: ['admin'] }],
    ['args.role in ["admin", "root"]', { role: ['admin'] }],
    ['context.region matches "^eu"', { region: 'us' }],
  ])('fires %s on a list or object where a scalar is expected', (condition, args) => {
    const input = makeInput({}, args);
    if (condition.startsWith('context')) Object.assign(input, { context: { region: ['eu'] } });
    const set = compilePolicies([{ name: 'p', rules: [{ condition, action: 'deny', reason: 'r' }] }]);
    expect((set.evaluate(input, { limiter: new SlidingWindowLimiter(), nowMs: 0 }) as Decision).effect).toBe('deny');
  });
});
