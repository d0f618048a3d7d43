import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { LRUCache } from 'lru-cache';
import { ClusterEvents } from '../changes/cluster-events';
import { AgentSnapshot, AgentSource, agentSnapshot } from '../../core/decision/decision-sources';
import { Agent } from './agent.entity';

const MAX_AGENTS = 100_000;

/**
 * Current agent records for the decision path, cached in memory. Changes and revocations are
 * evicted through ClusterEvents on every instance, so a PATCH or revoke holds on the next
 * request whatever the token's claims say. A load that overlaps an eviction is not cached.
 */
@Injectable()
export class AgentDirectory implements AgentSource, OnModuleInit {
  private readonly agents = new LRUCache<string, AgentSnapshot>({ max: MAX_AGENTS });
  private evictions = 0;

  constructor(
    @InjectRepository(Agent) private readonly repository: Repository<Agent>,
    private readonly events: ClusterEvents,
  ) {}

  onModuleInit(): void {
    this.events.subscribe((event) => {
      if (event.type === 'agent.changed' || event.type === 'agent.revoked') this.evict(event.agentId);
      else if (event.type === 'resync') this.clear();
    });
  }

  /** The agent, or null when it does not exist; resolved at once when cached. */
  get(agentId: string): Promise<AgentSnapshot | null> {
    const cached = this.agents.get(agentId);
    return cached !== undefined ? Promise.resolve(cached) : this.load(agentId);
  }

  private evict(agentId: string): void {
    this.evictions++;
    this.agents.delete(agentId);
  }

  private clear(): void {
    this.evictions++;
    this.agents.clear();
  }

  private async load(agentId: string): Promise<AgentSnapshot | null> {
    const evictionsAtStart = this.evictions;
    const agent = await this.repository.findOne({ where: { id: agentId } });
    if (agent === null) return null;
    const snapshot = toSnapshot(agent);
    if (this.evictions === evictionsAtStart) {
      this.agents.set(agentId, snapshot);
    }
    return snapshot;
  }
}

function toSnapshot(agent: Agent): AgentSnapshot {
  return agentSnapshot({ id: agent.id, orgId: agent.orgId, name: agent.name, trustTier: agent.trustTier, tags: agent.tags, revoked: agent.revokedAt !== null });
}
