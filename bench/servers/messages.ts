/** IPC between the bench process and the helper servers it forks. */
export type ChildMessage =
  | { type: 'listening'; port: number }
  | { type: 'count'; served: number }
  /** The alert receiver's counts: alerts received, those validly signed, distinct alert ids. */
  | { type: 'alerts'; alerts: number; signed: number; ids: number };

export type ParentMessage = { type: 'count' } | { type: 'reset' };
