import { compilePolicies } from './compile-policies';
import { SlidingWindowLimiter } from './sliding-window-limiter';
import type { DecisionInput, PolicyDefinition } from './types';

const input = (action: string, tier = 'verified'): DecisionInput => ({
  agent: { id: 'a', name: 'a', trust_tier: tier, tags: [] },
  action,
  resource: '',
  plugin: 'http',
  function: 'read',
  args: {},
  context: {},
  delegation: { depth: 1, chain: [] },
});

const policies: PolicyDefinition[] = [
  { name: 'enforced', match: { action: 'read:a*' }, rules: [{ condition: 'agent.trust_tier < trusted', action: 'deny', reason: 'in force' }] },
  { name: 'shadow', mode: 'shadow', match: { action: 'read:*' }, rules: [{ name: 'no-b', condition: 'action == "read:b"', action: 'deny', reason: 'would deny' }] },
  { name: 'limited', mode: 'shadow', rules: [{ condition: 'rate_limit(per_agent, 1, 1m)', action: 'deny', reason: 'too many' }] },
];

describe('shadow policies', () => {
  const set = compilePolicies(policies, { namespace: 'org' });
  const env = () => ({ limiter: new SlidingWindowLimiter(), nowMs: 1_000 });

  it('take no part in the decision', async () => {
    expect(await set.evaluate(input('read:b'), env())).toMatchObject({ effect: 'allow', policy: 'default' });
    expect(set.policies.map((policy) => policy.name)).toEqual(['enforced']);
    expect(set.shadowPolicies.map((policy) => policy.name)).toEqual(['shadow', 'limited']);
  });

  it('each say what it would have decided alone, where its match applies', async () => {
    expect(await set.shadowDecisions(input('read:b'), env())).toEqual([
      { policy: 'shadow', decision: 'deny', rule: 'no-b', reason: 'would deny' },
      { policy: 'limited', decision: 'allow', rule: null, reason: 'allowed' },
    ]);
    expect(await set.shadowDecisions({ ...input('write:b'), function: 'write' }, env())).toEqual([{ policy: 'limited', decision: 'allow', rule: null, reason: 'allowed' }]);
  });

  it('peek at rate limits, never count them', async () => {
    const shared = env();
    for (let i = 0; i < 3; i++) expect((await set.shadowDecisions(input('read:c'), shared))[1]).toMatchObject({ decision: 'allow' });
  });
});
