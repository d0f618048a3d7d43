/** IPC between the bench process and the helper servers it forks. */
export type ChildMessage =
  | { type: 'listening'; port: number }
  | { type: 'count'; served: number }
  /** The alert receiver's counts: alerts received, distinct alert ids, signatures checked and found valid. */
  | { type: 'alerts'; alerts: number; ids: number; checked: number; signed: number };

export type ParentMessage = { type: 'count' } | { type: 'reset' };
