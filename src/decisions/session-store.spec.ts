import { SessionStore } from './session-store';

const START_MS = Date.UTC(2026, 0, 1);

describe('SessionStore', () => {
  it('at its bound per organization ends the least recently used session, and a touch keeps one', () => {
    const store = new SessionStore({ maxSessionsPerOrg: 3, maxSessionsPerAgent: 10 });
    const key = (sessionId: string) => ({ orgId: 'org-1', agentId: 'agent-1', sessionId });
    for (const id of ['a', 'b', 'c']) store.remember(key(id), 'read:x', undefined, START_MS);
    store.recall(key('a'), START_MS + 1);
    store.remember(key('d'), 'read:x', undefined, START_MS + 2);
    expect(store.sessionsOf('org-1')).toBe(3);
    expect(store.recall(key('a'), START_MS + 3).calls).toEqual({ 'read:x': 1 });
    expect(store.recall(key('b'), START_MS + 3).calls).toEqual({});
  });

  // The cost of opening a session may not grow with history (docs/performance.md): a Map
  // re-inserted on every touch and trimmed from its front walked the holes its deletions left.
  // A ratio within one run, not a wall time.
  it('opens sessions past its bound at no more than three times the cost of its first 50,000, below it', () => {
    const store = new SessionStore({ maxSessionsPerOrg: 50_000, maxSessionsPerAgent: 50_000 });
    const window = 50_000;
    const windowMs: number[] = [];
    let windowStart = performance.now();
    for (let index = 0; index < 400_000; index += 1) {
      const key = { orgId: 'org-1', agentId: `agent-${index % 1000}`, sessionId: `s-${index}` };
      store.remember(key, 'read:x', undefined, START_MS + index);
      if ((index + 1) % window === 0) {
        windowMs.push(performance.now() - windowStart);
        windowStart = performance.now();
      }
    }
    expect(store.sessionsOf('org-1')).toBe(50_000);
    const [first] = windowMs;
    const last = windowMs[windowMs.length - 1];
    expect(last / first).toBeLessThan(3);
  }, 120_000);
});
