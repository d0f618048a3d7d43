import type { DecisionInput } from './types';

/** A condition without rate_limit: plain, synchronous, allocation-free. */
export type SyncTest = (input: DecisionInput) => boolean;
