import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { Agent } from '../agents/agent.entity';
import { AppError } from '../../core/common/app-error';
import { AppConfig } from '../../core/config/app-config';
import { canonicalTier } from '../../core/policy-engine/tiers';
import { IdentityView, TrustView } from './identity.dto';
import { KeyRing } from '../signing-keys/key-ring';
import { trustScore } from './trust-score';

/** The recent window of the audit trail the trust score reads. */
const TRUST_WINDOW = '7d';
const TRUST_WINDOW_MS = 7 * 86_400_000;

/** The identity description and the trust score of an agent, within the caller's organization. */
@Injectable()
export class AgentIdentityService {
  constructor(
    @InjectRepository(Agent) private readonly agents: Repository<Agent>,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly keyRing: KeyRing,
    private readonly config: AppConfig,
  ) {}

  /** The agent as the identity description presents it; another organization's agent is 404. */
  async describe(orgId: string, agentId: string): Promise<IdentityView> {
    const agent = await this.owned(orgId, agentId);
    return {
      id: agent.id,
      name: agent.name,
      tier: identityTier(agent.trustTier),
      tags: agent.tags,
      org: agent.orgId,
      issuer: this.config.http.publicUrl,
      keyId: this.keyRing.signingKey().kid,
      createdAt: agent.createdAt.toISOString(),
      revoked: agent.revokedAt !== null,
      revokedAt: agent.revokedAt?.toISOString() ?? null,
    };
  }

  /** The trust score from the agent's record and its decisions of the last 7 days. */
  async trust(orgId: string, agentId: string, nowMs = Date.now()): Promise<TrustView> {
    const agent = await this.owned(orgId, agentId);
    const rows: Array<{ decisions: string; denied: string; rate_limited: string }> = await this.dataSource.query(
      `SELECT count(*) AS decisions,
              count(*) FILTER (WHERE decision = 'deny' AND NOT rate_limited) AS denied,
              count(*) FILTER (WHERE rate_limited) AS rate_limited
       FROM audit_entries WHERE org_id = $1 AND agent_id = $2 AND kind = 'decision' AND ts >= $3 AND ts <= $4`,
      [orgId, agentId, new Date(nowMs - TRUST_WINDOW_MS), new Date(nowMs)],
    );
    const { score, factors } = trustScore({
      tier: agent.trustTier,
      createdAtMs: agent.createdAt.getTime(),
      revoked: agent.revokedAt !== null,
      decisions: Number(rows[0].decisions),
      denied: Number(rows[0].denied),
      rateLimitHits: Number(rows[0].rate_limited),
      nowMs,
    });
    return { agentId, score, window: TRUST_WINDOW, factors, computedAt: new Date(nowMs).toISOString() };
  }

  private async owned(orgId: string, agentId: string): Promise<Agent> {
    const agent = await this.agents.findOne({ where: { id: agentId, orgId } });
    if (agent === null) throw AppError.notFound('agent', agentId);
    return agent;
  }
}

/** The identity vocabulary names the lowest rung `untrusted` (docs/policies.md "Trust tiers"). */
function identityTier(tier: string): string {
  const canonical = canonicalTier(tier) ?? 'unverified';
  return canonical === 'unverified' ? 'untrusted' : canonical;
}
