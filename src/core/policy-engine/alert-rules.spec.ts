import { compilePolicies } from './compile-policies';
import { loadPolicyFile } from './loader';
import { SlidingWindowLimiter } from './sliding-window-limiter';
import type { Decision, DecisionInput, PolicyDefinition, RateLimiter, RuleDefinition } from './types';

/** `alert` rules: they raise an alert where evaluation reaches them and never change the decision. */

function input(tier: string, action: string): DecisionInput {
  return {
    agent: { id: 'agent_1', name: 'bot', trust_tier: tier, tags: [], org: 'org_1' },
    action,
    resource: '/x',
    plugin: 'http',
    function: action.split(':')[0],
    args: { path: '/x', method: 'DELETE' },
    context: {},
    delegation: { depth: 1, chain: ['agent_1'] },
  };
}

const rule = (name: string, condition: string, action: RuleDefinition['action']): RuleDefinition => ({ name, condition, action, reason: `${name} reason` });
const WATCH = rule('watch', 'agent.trust_tier == "privileged" and action starts_with "delete:"', 'alert');

function decide(policies: PolicyDefinition[], asked: DecisionInput, limiter: RateLimiter = new SlidingWindowLimiter()): Decision | Promise<Decision> {
  return compilePolicies(policies).evaluate(asked, { limiter, nowMs: 0 });
}

/** A limiter that answers with Promises, so evaluation suspends and resumes at rate-limited rules. */
function asyncLimiter(): RateLimiter {
  const inner = new SlidingWindowLimiter();
  return {
    hit: async (...args) => inner.hit(...args),
    peek: async (...args) => inner.peek(...args),
  };
}

describe('alert rules', () => {
  it('load from YAML beside allow and deny rules', () => {
    const [loaded] = loadPolicyFile('policies:\n  - name: p\n    rules:\n      - condition: "true"\n        action: alert\n        reason: look\n', 'p.yaml');
    expect(loaded.rules[0].action).toBe('alert');
  });

  it('fire without deciding: the decision is what it would be without them, plus alerts', () => {
    const decided = decide([{ name: 'p', rules: [WATCH] }], input('privileged', 'delete:orders/1')) as Decision;
    expect(decided).toEqual({ effect: 'allow', policy: 'p', rule: null, reason: 'allowed', alerts: [{ policy: 'p', rule: 'watch', reason: 'watch reason' }] });
  });

  it('add nothing (and no alerts field) when their condition is false', () => {
    const decided = decide([{ name: 'p', rules: [WATCH] }], input('verified', 'delete:orders/1')) as Decision;
    expect(decided).toEqual({ effect: 'allow', policy: 'p', rule: null, reason: 'allowed' });
    expect('alerts' in decided).toBe(false);
  });

  it('do not count as an allow for default: deny, and ride along with the deny that decides', () => {
    const defaultDeny = decide([{ name: 'p', default: 'deny', rules: [WATCH] }], input('privileged', 'delete:x')) as Decision;
    expect(defaultDeny).toMatchObject({ effect: 'deny', rule: 'p#default', alerts: [{ rule: 'watch' }] });
    const denied = decide([{ name: 'a', rules: [WATCH] }, { name: 'b', rules: [rule('no', 'true', 'deny')] }], input('privileged', 'delete:x')) as Decision;
    expect(denied).toMatchObject({ effect: 'deny', policy: 'b', rule: 'no', alerts: [{ policy: 'a', rule: 'watch' }] });
  });

  it('after the deciding deny are not reached', () => {
    const decided = decide([{ name: 'b', rules: [rule('no', 'true', 'deny')] }, { name: 'a', rules: [WATCH] }], input('privileged', 'delete:x')) as Decision;
    expect(decided).toEqual({ effect: 'deny', policy: 'b', rule: 'no', reason: 'no reason' });
  });

  it('leave the shared decision objects untouched', () => {
    const set = compilePolicies([{ name: 'p', rules: [rule('ok', 'true', 'allow'), WATCH] }]);
    const alerted = set.evaluate(input('privileged', 'delete:x'), { limiter: new SlidingWindowLimiter(), nowMs: 0 }) as Decision;
    const plain = set.evaluate(input('verified', 'delete:x'), { limiter: new SlidingWindowLimiter(), nowMs: 0 }) as Decision;
    expect(alerted.alerts).toHaveLength(1);
    expect(plain).toEqual({ effect: 'allow', policy: 'p', rule: 'ok', reason: 'ok reason' });
  });

  it.each([
    ['a synchronous', () => new SlidingWindowLimiter()],
    ['an asynchronous', asyncLimiter],
  ])('with rate_limit, under %s limiter, fire once the limit trips and keep the alerts of earlier rules', async (_, limiter) => {
    const policies: PolicyDefinition[] = [
      { name: 'p', rules: [WATCH, rule('burst', 'rate_limit(per_agent, 1, 1m)', 'alert'), rule('ok', 'true', 'allow')] },
    ];
    const shared = limiter();
    const first = await decide(policies, input('privileged', 'delete:x'), shared);
    const second = await decide(policies, input('privileged', 'delete:x'), shared);
    expect(first).toMatchObject({ effect: 'allow', rule: 'ok', alerts: [{ rule: 'watch' }] });
    expect(second).toMatchObject({ effect: 'allow', rule: 'ok', alerts: [{ rule: 'watch' }, { rule: 'burst' }] });
  });

  it('appear in explanations with their action', async () => {
    const explanation = await compilePolicies([{ name: 'p', rules: [WATCH] }]).explain(input('privileged', 'delete:x'), { limiter: new SlidingWindowLimiter(), nowMs: 0 });
    expect(explanation.trace).toEqual([{ policy: 'p', applicable: true, rules: [{ rule: 'watch', action: 'alert', result: true }] }]);
    expect(explanation.decision.alerts).toEqual([{ policy: 'p', rule: 'watch', reason: 'watch reason' }]);
  });
});
