import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { Logger } from 'pino';
import { ClusterEvents } from '../changes/cluster-events';
import { DecisionMemory } from '../../core/decision/decision-memory';
import { LOGGER } from '../../core/logging/logging.module';

/** Applies labels cleared on any instance (or by the CLI) to this instance's session memory (or the one in Redis all share). */
@Injectable()
export class SessionMemorySync implements OnModuleInit {
  constructor(
    private readonly events: ClusterEvents,
    private readonly memory: DecisionMemory,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onModuleInit(): void {
    this.events.subscribe((event) => {
      if (event.type !== 'session.labels_cleared') return;
      this.memory.clearLabels(event.orgId, event.agentId, event.sessionId ?? undefined, Date.now()).catch((error: unknown) => {
        this.logger.warn({ err: error instanceof Error ? error.message : String(error), agentId: event.agentId }, 'session labels could not be cleared in the session memory (REDIS_URL)');
      });
    });
  }
}
