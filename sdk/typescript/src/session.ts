import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The session a flow's governed calls belong to (docs/policies.md "Sessions" in the repository):
 * named for a client by its `sessionId` option, or for the calls of one flow by inSession().
 */

/** What the gateway takes as a session id. */
const SESSION_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const flowSession = new AsyncLocalStorage<string>();

/** The id, or a TypeError naming `name` when the gateway would refuse it. */
export function checkedSessionId(value: unknown, name: string): string {
  if (typeof value !== 'string' || !SESSION_ID.test(value)) throw new TypeError(`${name} must be 1 to 128 characters of A-Z a-z 0-9 . _ : -`);
  return value;
}

/**
 * Runs `flow` with `sessionId` as the session of every check it makes (a conversation, a
 * request), over the client's `sessionId` option: the awaits, timers and callbacks that follow
 * from it included (AsyncLocalStorage). A session id is the caller's claim: for a protection an
 * agent must not escape, label the agent itself (`scope: agent`).
 */
export function inSession<T>(sessionId: string, flow: () => T): T {
  return flowSession.run(checkedSessionId(sessionId, 'sessionId'), flow);
}

/** The session inSession() named for the current flow, if any. */
export function currentSession(): string | undefined {
  return flowSession.getStore();
}
