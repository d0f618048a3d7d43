import { analyzeCondition } from './checker';
import { compilePolicies } from './compile-policies';
import { SlidingWindowLimiter } from './sliding-window-limiter';
import type { Decision, DecisionInput, OrgFacts } from './types';

/** Plan-aware conditions: `org.plan`, `org.usage.policy_checks`, `org.usage.agents`, `org.id`. */

function makeInput(org?: OrgFacts): DecisionInput {
  return {
    agent: { id: 'agent_1', name: 'bot', trust_tier: 'verified', tags: [], org: 'org_1' },
    action: 'write:reports',
    resource: 'reports',
    plugin: 'http',
    function: 'write',
    args: { size: 20 },
    context: {},
    delegation: { depth: 1, chain: [] },
    ...(org === undefined ? {} : { org }),
  };
}

const FREE: OrgFacts = { id: 'org_1', plan: 'free', usage: { policy_checks: 950, agents: 2 } };
const STARTER: OrgFacts = { id: 'org_1', plan: 'starter', usage: { policy_checks: 12, agents: 7 } };

function holds(condition: string, input: DecisionInput): boolean {
  const set = compilePolicies([{ name: 'p', rules: [{ condition, action: 'deny', reason: 'r' }] }]);
  return (set.evaluate(input, { limiter: new SlidingWindowLimiter(), nowMs: 0 }) as Decision).effect === 'deny';
}

describe('org.* paths', () => {
  it.each<[string, boolean, boolean, boolean]>([
    // condition, on free, on starter, with no org in the input
    ['org.plan == "free"', true, false, false],
    ["org.plan == 'starter'", false, true, false],
    ['org.plan != "free"', false, true, true],
    ['org.plan in ["free", "starter"]', true, true, false],
    ['org.plan starts_with "pro"', false, false, false],
    ['org.usage.policy_checks > 900', true, false, false],
    ['org.usage.policy_checks >= 12', true, true, false],
    ['org.usage.agents == 7', false, true, false],
    ['org.usage.agents < 3', true, false, false],
    ['org.id == agent.org', true, true, false],
    ['exists(org.plan)', true, true, false],
    ['not exists(org.usage.agents)', false, false, true],
    ['org.plan == "free" and args.size > 10', true, false, false],
  ])('%s', (condition, onFree, onStarter, withoutOrg) => {
    expect([holds(condition, makeInput(FREE)), holds(condition, makeInput(STARTER)), holds(condition, makeInput())]).toEqual([onFree, onStarter, withoutOrg]);
  });

  it('reads a usage object missing from a partial org as missing, never throwing', () => {
    const partial = { id: 'org_1', plan: 'free' } as unknown as OrgFacts;
    expect(holds('org.usage.policy_checks > 0', makeInput(partial))).toBe(false);
    expect(holds('org.plan == "free"', makeInput(partial))).toBe(true);
  });

  it('decides a plan-aware policy: free organizations may not write large reports', () => {
    const set = compilePolicies([
      {
        name: 'free-plan-writes',
        match: { action: 'write:*' },
        rules: [{ name: 'large-on-free', condition: 'org.plan == "free" and args.size > 10', action: 'deny', reason: 'Upgrade to write large reports' }],
      },
    ]);
    const env = { limiter: new SlidingWindowLimiter(), nowMs: 0 };
    expect(set.evaluate(makeInput(FREE), env)).toMatchObject({ effect: 'deny', policy: 'free-plan-writes', rule: 'large-on-free', reason: 'Upgrade to write large reports' });
    expect(set.evaluate(makeInput(STARTER), env)).toMatchObject({ effect: 'allow', policy: 'free-plan-writes' });
  });

  it('accepts every org path at load time', () => {
    for (const path of ['org.id', 'org.plan', 'org.usage.policy_checks', 'org.usage.agents']) {
      expect(analyzeCondition(`exists(${path})`).ok).toBe(true);
    }
  });
});
