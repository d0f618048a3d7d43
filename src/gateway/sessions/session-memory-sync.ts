import { Injectable, OnModuleInit } from '@nestjs/common';
import { ClusterEvents } from '../changes/cluster-events';
import { DecisionMemory } from '../../core/decision/decision-memory';

/** Applies labels cleared on any instance (or by the CLI) to this instance's session memory. */
@Injectable()
export class SessionMemorySync implements OnModuleInit {
  constructor(
    private readonly events: ClusterEvents,
    private readonly memory: DecisionMemory,
  ) {}

  onModuleInit(): void {
    this.events.subscribe((event) => {
      if (event.type === 'session.labels_cleared') this.memory.clearLabels(event.orgId, event.agentId, event.sessionId ?? undefined, Date.now());
    });
  }
}
