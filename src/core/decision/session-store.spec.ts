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
});
