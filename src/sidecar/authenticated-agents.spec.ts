import type { BundleContent } from '../core/edge-protocol/bundle-format';
import type { AuthenticatedAgent } from '../core/decision/agent-authenticator';
import { AuthenticatedAgents } from './authenticated-agents';

const bundleA = { version: 'a' } as BundleContent;
const bundleB = { version: 'b' } as BundleContent;
const agent = { claims: { exp: 2_000 } } as AuthenticatedAgent;

describe('AuthenticatedAgents', () => {
  it('knows an agent under the same bundle until its token expires', () => {
    const agents = new AuthenticatedAgents();
    agents.set('Bearer t', bundleA, agent);
    expect(agents.get('Bearer t', bundleA, 1_999_999)).toBe(agent);
    expect(agents.get('Bearer t', bundleA, 2_000_000)).toBeUndefined();
    expect(agents.get('Bearer other', bundleA, 0)).toBeUndefined();
    expect(agents.get(undefined, bundleA, 0)).toBeUndefined();
  });

  it('forgets every agent when another bundle is in force', () => {
    const agents = new AuthenticatedAgents();
    agents.set('Bearer t', bundleA, agent);
    expect(agents.get('Bearer t', bundleB, 0)).toBeUndefined();
    agents.set('Bearer u', bundleB, agent);
    expect(agents.get('Bearer t', bundleA, 0)).toBeUndefined();
    expect(agents.get('Bearer u', bundleB, 0)).toBe(agent);
  });
});
