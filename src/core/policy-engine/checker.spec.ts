import { analyzeCondition } from './checker';

function issues(text: string): [number, string][] {
  const result = analyzeCondition(text);
  return result.ok ? [] : result.issues.map((issue) => [issue.offset, issue.message]);
}

const ROOTS = 'agent, args, context, action, resource, plugin, function, delegation, org, tool, session';
const TIERS = 'expected unverified, verified, trusted, privileged or an alias (untrusted, sandboxed, restricted, standard, elevated)';

describe('checkCondition: load-time errors', () => {
  it.each<[string, [number, string][]]>([
    ['user.id == "x"', [[0, `unknown variable 'user' (expected one of ${ROOTS})`]]],
    ['args.x == foo', [[10, `unknown variable 'foo' (expected one of ${ROOTS})`]]],
    ['agent.color == "red"', [[6, "unknown agent field 'color' (expected agent.id, agent.name, agent.trust_tier, agent.tags, agent.org)"]]],
    ['agent == "x"', [[0, "'agent' needs a field: agent.id, agent.name, agent.trust_tier, agent.tags, agent.org"]]],
    ['agent.tags.first == "x"', [[11, 'agent.tags has no fields']]],
    ['delegation.width > 1', [[11, "unknown delegation field 'width' (expected delegation.depth, delegation.chain)"]]],
    ['args == 1', [[0, "'args' needs a field name, e.g. args.name"]]],
    ['org == "x"', [[0, "'org' needs a field: org.id, org.plan, org.usage.policy_checks, org.usage.agents"]]],
    ['org.tier == "free"', [[4, "unknown org field 'tier' (expected org.id, org.plan, org.usage.policy_checks, org.usage.agents)"]]],
    ['org.plan.name == "free"', [[9, 'org.plan has no fields']]],
    ['org.usage > 1', [[0, "'org.usage' needs a field: org.usage.policy_checks, org.usage.agents"]]],
    ['org.usage.tokens > 1', [[10, "unknown org.usage field 'tokens' (expected org.usage.policy_checks, org.usage.agents)"]]],
    ['org.usage.agents.max > 1', [[17, 'org.usage.agents has no fields']]],
    ['context', [[0, "'context' needs a field name, e.g. context.name"]]],
    ['action.verb == "x"', [[7, "'action' is a string and has no fields"]]],
    ['lookup(args.x)', [[0, "unknown function 'lookup' (expected exists, rate_limit, budget, session.called, session.count, session.labels.has or agent.labels.has)"]]],
    ['exists(args.a, args.b)', [[0, 'exists() takes 1 argument (a path), got 2']]],
    ['exists("x")', [[7, 'exists() takes a path such as args.name']]],
    ['rate_limit(per_agent, 10)', [[0, 'rate_limit() takes 3 arguments (scope, count, window), got 2']]],
    ['rate_limit(per_user, 10, 1m)', [[11, 'bad rate_limit scope: expected per_agent, per_org, per_action, global']]],
    ['rate_limit("per_agent", 10, 1m)', [[11, 'bad rate_limit scope: expected per_agent, per_org, per_action, global']]],
    ['rate_limit(per_agent, 0, 1m)', [[22, 'bad rate_limit count: expected a whole number from 1 to 1000000']]],
    ['rate_limit(per_agent, 2.5, 1m)', [[22, 'bad rate_limit count: expected a whole number from 1 to 1000000']]],
    ['rate_limit(per_agent, 10, 1w)', [[26, 'bad rate_limit window: expected a number and a unit s, m, h or d, e.g. 30s or 1m']]],
    ['rate_limit(per_agent, 10, 60)', [[26, 'bad rate_limit window: expected a number and a unit s, m, h or d, e.g. 30s or 1m']]],
    ['rate_limit(per_agent, 10, 0s)', [[26, 'bad rate_limit window: it must be longer than zero']]],
    ['rate_limit(global, 1, 1s) == true', [[0, 'rate_limit(...) is a condition on its own; it cannot be an operand of a comparison']]],
    ['(rate_limit(global, 1, 1s) or true) == true', [[1, 'rate_limit(...) is a condition on its own; it cannot be an operand of a comparison']]],
    ['args.size > 10kb', [[12, 'a duration such as 10kb is only allowed as the window of rate_limit or budget']]],
    ['"text"', [[0, 'expected a condition, found the string "text"']]],
    ['args.a == 1 and 42', [[16, 'expected a condition, found the number 42']]],
    ['[1, 2]', [[0, 'expected a condition, found a list']]],
    ['agent.trust_tier == "boss"', [[20, `'boss' is not a trust tier: ${TIERS}`]]],
    ['agent.trust_tier >= boss', [[20, `unknown trust tier 'boss': ${TIERS}`]]],
    ['"boss" < agent.trust_tier', [[0, `'boss' is not a trust tier: ${TIERS}`]]],
    ['agent.trust_tier > 2', [[19, 'agent.trust_tier can only be compared with a trust tier, found the number 2']]],
    ['agent.trust_tier in ["trusted", "boss", 3]', [[32, `the string "boss" is not a trust tier: ${TIERS}`], [40, `the number 3 is not a trust tier: ${TIERS}`]]],
    ['agent.trust_tier in "trusted"', [[20, 'agent.trust_tier in … needs a list of trust tiers or a path']]],
    ['args.p matches args.q', [[15, 'the right side of matches must be a quoted regular expression']]],
    ['args.p matches "(a+)+$" and args.q matches "a*a*b"', []],
    ['args.p matches "(a)\\\\1"', [[19, 'unsafe or invalid regular expression: backreference \\1 at offset 3 is not supported: RE2 matches in linear time and has no backreferences']]],
    ['args.p matches "a(?=b)"', [[17, 'unsafe or invalid regular expression: lookaround (?= at offset 1 is not supported: RE2 matches in linear time and has no lookahead or lookbehind']]],
    ['args.p matches "(x"', [[16, 'unsafe or invalid regular expression: missing closing ): `(x`']]],
    [`args.p matches "${'a'.repeat(257)}"`, [[15, 'unsafe or invalid regular expression: regular expression longer than 256 characters']]],
  ])('%s', (text, expected) => {
    expect(issues(text)).toEqual(expected);
  });

  it('reports every problem of a condition, not just the first', () => {
    expect(issues('user.x == 1 or agent.color == 2 or rate_limit(everyone, -1, 1y)').map(([offset]) => offset)).toEqual([0, 21, 46, 56, 60]);
  });

  it('reports a syntax error as a single issue', () => {
    expect(issues('args.x ==')).toEqual([[9, 'expected a value, found end of condition']]);
  });

  it('collects the top-level arg names and the rate limits in source order', () => {
    const result = analyzeCondition('args.a.b == 1 and args["c-d"] == 2 or rate_limit(per_org, 5, 30s) or not rate_limit(global, 1, 1d)');
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect([...result.condition.argNames]).toEqual(['a', 'c-d']);
    expect(result.condition.rateLimits).toEqual([
      { kind: 'rate_limit', scope: 'per_org', count: 5, windowMs: 30_000, windowText: '30s', callIndex: 0 },
      { kind: 'rate_limit', scope: 'global', count: 1, windowMs: 86_400_000, windowText: '1d', callIndex: 1 },
    ]);
  });
});
