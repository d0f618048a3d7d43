import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { DecisionEvent, DecisionEvents } from './decision-events';
import type { LinkedDecision } from './decision-links';

/** Most decisions remembered, and for how long: an outcome follows its call within moments. */
export const MAX_REMEMBERED_DECISIONS = 100_000;
const REMEMBER_MS = 60 * 60 * 1000;

type RememberedDecision = LinkedDecision & { atMs: number };

/**
 * The adapters' recent decisions (PDP, `/v1/check`, the sidecar's), in memory, so that an
 * outcome reported by `/v1/audit` is checked against its decision before that decision's audit
 * entry is written. Bounded (docs/performance.md): at MAX_REMEMBERED_DECISIONS the oldest is
 * forgotten, in constant time whatever the history (an LRU list over a preallocated ring, not a
 * `Map` whose first key is found by walking the holes its deletions left), and one older than an
 * hour is never answered.
 */
@Injectable()
export class RecentDecisions implements OnModuleDestroy {
  private readonly decisions = new LRUCache<string, RememberedDecision>({ max: MAX_REMEMBERED_DECISIONS });
  private readonly unsubscribe: () => void;

  constructor(events: DecisionEvents) {
    this.unsubscribe = events.subscribe((event) => this.remember(event));
  }

  onModuleDestroy(): void {
    this.unsubscribe();
  }

  /** The decision of that id, if it was made here within the last hour. */
  get(decisionId: string, nowMs = Date.now()): LinkedDecision | undefined {
    const known = this.decisions.peek(decisionId);
    return known !== undefined && nowMs - known.atMs < REMEMBER_MS ? known : undefined;
  }

  private remember({ entry }: DecisionEvent): void {
    if (entry.source === 'proxy') return;
    const input = entry.input as { plugin?: unknown; function?: unknown } | null;
    this.decisions.set(entry.id, {
      orgId: entry.orgId,
      agentId: entry.agentId ?? '',
      plugin: typeof input?.plugin === 'string' ? input.plugin : '',
      function: typeof input?.function === 'string' ? input.function : '',
      allowed: entry.decision === 'allow' || !entry.enforced,
      policyName: entry.policyName,
      rule: entry.rule,
      reason: entry.reason,
      atMs: entry.ts,
    });
  }
}
