/** IPC between the bench process and the helper servers it forks. */

/** What the alert receiver found in the requests it has verified: alerts, distinct ids, signatures checked, valid, and valid with a fresh timestamp. */
export interface AlertCounts {
  alerts: number;
  ids: number;
  checked: number;
  signed: number;
  fresh: number;
}

export type ChildMessage =
  | { type: 'listening'; port: number }
  | { type: 'count'; served: number }
  /** The alert receiver's requests received so far (framed and answered, not yet verified), and when the last one came (ms since the epoch, its clock). */
  | { type: 'received'; requests: number; lastAtMs: number }
  /** The alert receiver has received the requests it was asked to `await`, at `atMs` (its clock, ms since the epoch). */
  | { type: 'reached'; requests: number; atMs: number }
  | ({ type: 'alerts' } & AlertCounts);

/** `await`: answer once `count` requests have been received (`reached`), or after `timeoutMs` (`received`). */
export type ParentMessage = { type: 'count' } | { type: 'reset' } | { type: 'verify' } | { type: 'await'; count: number; timeoutMs: number };
