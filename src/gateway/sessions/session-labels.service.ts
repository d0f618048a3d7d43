import { Injectable } from '@nestjs/common';
import { AdminPrincipal } from '../common/admin-principal';
import { AgentsService } from '../agents/agents.service';
import { AuditService } from '../audit/audit.service';
import { ClusterEvents } from '../changes/cluster-events';

/** Who clears: an admin token, or the CLI. */
export type LabelsActor = AdminPrincipal | { orgId: string; tokenId: 'cli' };

/**
 * Ends labels (docs/policies.md "Labels"): of one session of an agent, or on the agent itself.
 * Labels only accumulate otherwise. Session memory is held by each gateway instance, so the
 * change is a cluster event every instance applies (the publishing one before this answers);
 * the agent must be the organization's own (404 otherwise), and each clear is an admin event in
 * the audit trail.
 */
@Injectable()
export class SessionLabelsService {
  constructor(
    private readonly agents: AgentsService,
    private readonly events: ClusterEvents,
    private readonly audit: AuditService,
  ) {}

  async clear(actor: LabelsActor, agentId: string, scope: 'session' | 'agent', sessionId: string | undefined): Promise<{ agentId: string; scope: 'session' | 'agent'; sessionId: string | null }> {
    const agent = await this.agents.get(actor, agentId);
    const session = scope === 'agent' ? null : (sessionId ?? '');
    await this.events.publish({ type: 'session.labels_cleared', orgId: actor.orgId, agentId: agent.id, sessionId: session });
    this.audit.recordAdminEvent(actor, { action: 'session.labels_clear', agentId: agent.id, agentName: agent.name, details: { scope, sessionId: session } });
    return { agentId: agent.id, scope, sessionId: session };
  }
}
