import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, IsNull, Repository } from 'typeorm';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { newId } from '../../core/common/ids';
import { AuditService } from '../audit/audit.service';
import { ClusterEvents } from '../changes/cluster-events';
import { PolicyChangeLog } from '../changes/policy-change-log';
import { AgentTokenService } from '../signing-keys/agent-token.service';
import { OrganizationsService } from '../organizations/organizations.service';
import { Agent } from './agent.entity';
import { AgentView, CreateAgentDto, CreatedAgentView, IssuedTokenView, UpdateAgentDto } from './agents.dto';

type Actor = AdminPrincipal | { orgId: string; tokenId: 'cli' };
const UPDATABLE = ['name', 'trustTier', 'tags', 'metadata'] as const;

/** Agent identity: create (with its first token), read, update, revoke, and fresh tokens. */
@Injectable()
export class AgentsService {
  constructor(
    @InjectRepository(Agent) private readonly agents: Repository<Agent>,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly organizations: OrganizationsService,
    private readonly tokens: AgentTokenService,
    private readonly audit: AuditService,
    private readonly events: ClusterEvents,
    private readonly changeLog: PolicyChangeLog,
  ) {}

  /** Creates an agent within the plan's agent limit and returns it with its token. */
  async create(actor: Actor, dto: CreateAgentDto): Promise<CreatedAgentView> {
    const agent = await this.dataSource.transaction(async (manager) => {
      await this.organizations.assertCanAdd(manager, actor.orgId, 'agents', () =>
        manager.getRepository(Agent).count({ where: { orgId: actor.orgId, revokedAt: IsNull() } }),
      );
      const created = manager.getRepository(Agent).create({
        id: newId('agent'),
        orgId: actor.orgId,
        name: dto.name,
        trustTier: dto.trustTier ?? 'unverified',
        tags: dedupe(dto.tags ?? []),
        metadata: dto.metadata ?? {},
        revokedAt: null,
      });
      return manager.getRepository(Agent).save(created);
    });
    const issued = await this.tokens.issue(agent);
    this.audit.recordAdminEvent(actor, {
      action: 'agent.create',
      agentId: agent.id,
      agentName: agent.name,
      details: { next: { name: agent.name, trustTier: agent.trustTier, tags: agent.tags } },
    });
    return { ...toView(agent), token: issued.token, tokenExpiresAt: issued.expiresAt.toISOString() };
  }

  async list(actor: Actor, includeRevoked = false): Promise<AgentView[]> {
    const where = includeRevoked ? { orgId: actor.orgId } : { orgId: actor.orgId, revokedAt: IsNull() };
    const agents = await this.agents.find({ where, order: { createdAt: 'ASC', id: 'ASC' } });
    return agents.map(toView);
  }

  async get(actor: Actor, agentId: string): Promise<AgentView> {
    return toView(await this.getOwned(actor, agentId));
  }

  /**
   * Changes only the supplied fields and records previous and new values in the audit trail.
   * Another organization's agent is 403 here, 404 on the other routes (docs/security.md).
   */
  async update(actor: Actor, agentId: string, dto: UpdateAgentDto): Promise<AgentView> {
    const { saved, previous, next, version } = await this.dataSource.transaction(async (manager) => {
      const agent = await lockAgent(manager, { id: agentId });
      if (agent === null) throw AppError.notFound('agent', agentId);
      if (agent.orgId !== actor.orgId) throw new AppError(ErrorCode.Forbidden, `agent ${agentId} belongs to another organization`);
      if (agent.revokedAt !== null) throw new AppError(ErrorCode.AgentRevoked, `agent ${agentId} is revoked and cannot be changed`);
      const changes = changesOf(agent, dto);
      if (Object.keys(changes.next).length === 0) return { saved: agent, ...changes, version: null };
      const stored = await manager.getRepository(Agent).save(Object.assign(agent, changes.next));
      // Decisions read the tier and tags: a change to them gets a policy version.
      const decisive = 'trustTier' in changes.next || 'tags' in changes.next;
      return { saved: stored, ...changes, version: decisive ? await this.changeLog.recordIn(manager, stored.orgId, 'agent_changed', agentId, actor.tokenId) : null };
    });
    if (Object.keys(next).length === 0) return toView(saved);
    await this.events.publish({ type: 'agent.changed', orgId: saved.orgId, agentId });
    if (version !== null) await this.changeLog.announce(saved.orgId, version, 'agent_changed', agentId);
    this.audit.recordAdminEvent(actor, { action: 'agent.update', agentId, agentName: saved.name, details: { previous, next } });
    return toView(saved);
  }

  /** Revokes an agent: immediate and permanent, on every instance. Repeating it changes nothing. */
  async revoke(actor: Actor, agentId: string): Promise<AgentView> {
    const { agent, version } = await this.dataSource.transaction(async (manager) => {
      const locked = await lockAgent(manager, { id: agentId, orgId: actor.orgId });
      if (locked === null) throw AppError.notFound('agent', agentId);
      if (locked.revokedAt !== null) return { agent: locked, version: null };
      locked.revokedAt = new Date();
      const revoked = await manager.getRepository(Agent).save(locked);
      return { agent: revoked, version: await this.changeLog.recordIn(manager, revoked.orgId, 'agent_revoked', agentId, actor.tokenId) };
    });
    if (version === null) return toView(agent);
    await this.events.publish({ type: 'agent.revoked', orgId: agent.orgId, agentId });
    await this.changeLog.announce(agent.orgId, version, 'agent_revoked', agentId);
    this.audit.recordAdminEvent(actor, { action: 'agent.revoke', agentId, agentName: agent.name, details: { previous: { status: 'active' }, next: { status: 'revoked' } } });
    return toView(agent);
  }

  /** A fresh token for an existing, active agent. */
  async issueToken(actor: Actor, agentId: string, ttlMs?: number): Promise<IssuedTokenView> {
    const agent = await this.getOwned(actor, agentId);
    if (agent.revokedAt !== null) throw new AppError(ErrorCode.AgentRevoked, `agent ${agentId} is revoked`);
    const issued = await this.tokens.issue(agent, ttlMs);
    this.audit.recordAdminEvent(actor, { action: 'agent.token', agentId, agentName: agent.name, details: { expiresAt: issued.expiresAt.toISOString() } });
    return { agentId, token: issued.token, expiresAt: issued.expiresAt.toISOString() };
  }

  /** The organization an agent belongs to (CLI commands name agents without an org). */
  async ownerOf(agentId: string): Promise<string> {
    const agent = await this.agents.findOne({ where: { id: agentId }, select: { id: true, orgId: true } });
    if (agent === null) throw AppError.notFound('agent', agentId);
    return agent.orgId;
  }

  private async getOwned(actor: Actor, agentId: string): Promise<Agent> {
    const agent = await this.agents.findOne({ where: { id: agentId, orgId: actor.orgId } });
    if (agent === null) throw AppError.notFound('agent', agentId);
    return agent;
  }
}

/**
 * The agent row, locked until the transaction ends: a change and a revocation each read and
 * write the whole row, so run side by side the later write would put back what the earlier one
 * replaced (a PATCH answered after a DELETE made the revoked agent active again).
 */
function lockAgent(manager: EntityManager, where: { id: string; orgId?: string }): Promise<Agent | null> {
  return manager.getRepository(Agent).findOne({ where, lock: { mode: 'pessimistic_write' } });
}

function toView(agent: Agent): AgentView {
  return {
    id: agent.id,
    name: agent.name,
    trustTier: agent.trustTier,
    tags: agent.tags,
    metadata: agent.metadata,
    status: agent.revokedAt === null ? 'active' : 'revoked',
    createdAt: agent.createdAt.toISOString(),
    updatedAt: agent.updatedAt.toISOString(),
    revokedAt: agent.revokedAt?.toISOString() ?? null,
  };
}

/** The supplied fields that differ from the agent's, with their previous values. */
function changesOf(agent: Agent, dto: UpdateAgentDto): { previous: Record<string, unknown>; next: Record<string, unknown> } {
  const previous: Record<string, unknown> = {};
  const next: Record<string, unknown> = {};
  for (const field of UPDATABLE) {
    const value = field === 'tags' && dto.tags ? dedupe(dto.tags) : dto[field];
    if (value === undefined || sameValue(agent[field], value)) continue;
    previous[field] = agent[field];
    next[field] = value;
  }
  return { previous, next };
}

function dedupe(tags: string[]): string[] {
  return [...new Set(tags)];
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
