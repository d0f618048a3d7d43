import { compilePolicies } from './compile-policies';
import { SlidingWindowLimiter } from './sliding-window-limiter';
import type { Decision, DecisionInput } from './types';

function input(tier: string, args: Record<string, unknown>, pinned?: boolean): DecisionInput {
  const base: DecisionInput = {
    agent: { id: 'agent_1', name: 'bot', trust_tier: tier, tags: [], org: 'org_1' },
    action: 'call:files/read_file',
    resource: 'read_file',
    plugin: 'files',
    function: 'read_file',
    args,
    context: {},
    delegation: { depth: 1, chain: [] },
  };
  return pinned === undefined ? base : { ...base, tool: { server: 'files', name: 'read_file', pinned } };
}

describe('tool.* paths', () => {
  const set = compilePolicies([{ name: 'unpinned', rules: [{ condition: 'tool.pinned == false', action: 'deny', reason: 'unpinned' }] }]);
  const decide = (value: DecisionInput) => (set.evaluate(value, { limiter: new SlidingWindowLimiter(), nowMs: 0 }) as Decision).effect;

  it('reads the MCP tool of a call, and as missing on other requests', () => {
    expect(decide(input('verified', {}, false))).toBe('deny');
    expect(decide(input('verified', {}, true))).toBe('allow');
    expect(decide(input('verified', {}))).toBe('allow');
  });

  it('refuses an unknown tool field at load time', () => {
    expect(() => compilePolicies([{ name: 'p', rules: [{ condition: 'tool.owner == "x"', action: 'deny', reason: 'r' }] }])).toThrow(/unknown|owner/);
  });
});

describe('denialRegardlessOfRequest', () => {
  const set = compilePolicies([
    { name: 'mail', match: { plugin: 'files' }, rules: [{ condition: 'agent.trust_tier < trusted', action: 'deny', reason: 'needs trusted' }] },
    { name: 'paths', match: { plugin: 'files' }, rules: [{ condition: 'args.path starts_with "/etc"', action: 'deny', reason: 'system' }] },
    { name: 'rate', match: { plugin: 'files' }, rules: [{ condition: 'rate_limit(per_agent, 1, 1m)', action: 'deny', reason: 'rate' }] },
  ]);

  it('finds a deny that holds whatever the call carries, and ignores rules on arguments, context and rate limits', () => {
    const verified = input('verified', { path: '/etc/passwd' });
    expect(set.denialRegardlessOfRequest(verified, set.applicable(verified))?.policy).toBe('mail');
    const trusted = input('trusted', { path: '/etc/passwd' });
    expect(set.denialRegardlessOfRequest(trusted, set.applicable(trusted))).toBeUndefined();
  });
});
