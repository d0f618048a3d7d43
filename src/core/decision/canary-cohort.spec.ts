import { compilePolicies } from '../policy-engine/compile-policies';
import type { DecisionInput, PolicyDefinition } from '../policy-engine/types';
import { canaryDefinitions, canaryDetails, cohortSet, inCanary, loadCanary } from './canary-cohort';

const stable: PolicyDefinition = { name: 'refunds', match: { action: 'read:refunds*' }, rules: [{ condition: 'args.amount > 1000', action: 'deny', reason: 'big' }] };
const other: PolicyDefinition = { name: 'orders', match: { action: 'read:orders*' }, rules: [{ condition: 'true', action: 'deny', reason: 'no' }] };
const canary: PolicyDefinition = { ...stable, rules: [{ condition: 'args.amount > 100', action: 'deny', reason: 'small' }] };

function input(action: string): DecisionInput {
  return { agent: { id: 'agent_1', name: 'a', trust_tier: 'verified', tags: [] }, action, resource: '', plugin: '', function: '', args: { amount: 500 }, context: {}, delegation: { depth: 1, chain: [] } };
}

describe('canary cohorts', () => {
  it('draw each agent once per rollout: the same answer every time, about the share of many agents, another draw for another rollout', () => {
    const ids = Array.from({ length: 2000 }, (_, i) => `agent_${i}`);
    const drawn = ids.filter((id) => inCanary('can_a', id, 10));
    expect(ids.filter((id) => inCanary('can_a', id, 10))).toEqual(drawn);
    expect(drawn.length).toBeGreaterThan(140);
    expect(drawn.length).toBeLessThan(260);
    expect(ids.filter((id) => inCanary('can_b', id, 10))).not.toEqual(drawn);
    expect(ids.every((id) => !inCanary('can_a', id, 0) && inCanary('can_a', id, 100))).toBe(true);
  });

  it('put the new version in place of the old, or last when the policy is new', () => {
    expect(canaryDefinitions([stable, other], canary)).toEqual([canary, other]);
    const added: PolicyDefinition = { ...canary, name: 'added' };
    expect(canaryDefinitions([stable, other], added)).toEqual([stable, other, added]);
  });

  it('name the cohort only where the rolled-out policy applies in either version', () => {
    const main = compilePolicies([stable, other], { namespace: 'org' });
    const loaded = loadCanary([stable, other], { id: 'can_x', policy: 'refunds', share: 50, definition: canary }, 'org');
    const member = Array.from({ length: 100 }, (_, i) => `agent_${i}`).find((id) => inCanary('can_x', id, 50))!;
    const { set, cohort } = cohortSet(main, loaded, member);
    expect(set).toBe(loaded.set);
    expect(cohort).toBe('canary');
    expect(canaryDetails(main, loaded, cohort, input('read:refunds'))).toEqual({ rollout: 'can_x', policy: 'refunds', cohort: 'canary' });
    expect(canaryDetails(main, loaded, cohort, input('read:orders/1'))).toBeUndefined();
    expect(cohortSet(main, undefined, member)).toEqual({ set: main });
  });
});
