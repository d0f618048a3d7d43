/** IPC between the bench process and the helper servers it forks. */
export type ChildMessage = { type: 'listening'; port: number } | { type: 'count'; served: number };

export type ParentMessage = { type: 'count' } | { type: 'reset' };
