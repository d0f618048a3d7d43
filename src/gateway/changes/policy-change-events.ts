import { Injectable } from '@nestjs/common';
import { ClusterEvents } from './cluster-events';
import type { ClusterEvent, PolicyChangeKind } from './cluster-event';

export type PolicyChange = Extract<ClusterEvent, { type: 'policies.changed' }>;

/**
 * Policy changes as an event stream: every change is announced in this process and on every
 * other instance (the PDP Subscribe stream and bundle sync listen here).
 */
@Injectable()
export class PolicyChangeEvents {
  constructor(private readonly events: ClusterEvents) {}

  /** Announces a committed change. */
  async announce(orgId: string, version: number, changed: string[], kind: PolicyChangeKind): Promise<void> {
    await this.events.publish({ type: 'policies.changed', orgId, version, changed, kind });
  }

  /** Calls `listener` for every policy change, here or on another instance; returns the unsubscribe. */
  listen(listener: (change: PolicyChange) => void): () => void {
    return this.events.subscribe((event) => {
      if (event.type === 'policies.changed') listener(event);
    });
  }
}
