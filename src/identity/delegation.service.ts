import { Injectable } from '@nestjs/common';
import { AgentDirectory } from '../agents/agent-directory';
import { AuditService } from '../audit/audit.service';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import type { AgentSnapshot } from '../decisions/decision-sources';
import { parseDuration } from '../policy-engine/duration';
import type { AuthenticatedAgent } from './agent-authenticator';
import type { ActorClaim } from './agent-token-claims';
import { AgentTokenService } from './agent-token.service';
import { scopeProblem } from './delegation-scope';
import { DelegatedTokenView, DelegateDto } from './identity.dto';

/** Longest chain a token may carry, original delegator and acting agent included. */
export const MAX_DELEGATION_DEPTH = 8;

/**
 * Delegation (RFC 8693 `act`): an agent hands another agent of its organization a token for
 * acting on its behalf. The token alone proves the chain, so its limits travel in it: it
 * expires no later than its parent, and its scope lies within its parent's.
 */
@Injectable()
export class DelegationService {
  constructor(
    private readonly agents: AgentDirectory,
    private readonly tokens: AgentTokenService,
    private readonly audit: AuditService,
  ) {}

  /** A token for `dto.agentId` acting on behalf of the caller (and of whoever the caller acts for). */
  async delegate(caller: AuthenticatedAgent, dto: DelegateDto, nowMs = Date.now()): Promise<DelegatedTokenView> {
    const parentChain = caller.delegation.depth > 1 ? caller.delegation.chain : [caller.agent.id];
    if (parentChain.includes(dto.agentId)) throw AppError.invalid(`agent ${dto.agentId} is already in the delegation chain (${parentChain.join(' > ')})`);
    if (parentChain.length + 1 > MAX_DELEGATION_DEPTH) throw AppError.invalid(`a delegation chain holds at most ${MAX_DELEGATION_DEPTH} agents`);
    const scope = this.scopeOf(caller, dto.scope);
    const ttlMs = this.lifetimeOf(caller, dto.ttl, nowMs);
    const delegate = await this.delegateAgent(caller.agent.orgId, dto.agentId);
    const act: ActorClaim = caller.claims.act ? { sub: caller.agent.id, act: caller.claims.act } : { sub: caller.agent.id };
    const issued = await this.tokens.issue(delegate, ttlMs, act, { scope, notAfter: caller.claims.exp });
    const chain = [...parentChain, delegate.id];
    const expiresAt = issued.expiresAt.toISOString();
    this.audit.recordAdminEvent(
      { orgId: caller.agent.orgId, tokenId: `agent:${caller.agent.id}` },
      { action: 'identity.delegate', agentId: delegate.id, agentName: delegate.name, details: { delegatedBy: caller.agent.id, chain, scope: scope ?? null, expiresAt } },
    );
    return { token: issued.token, expiresAt, agentId: delegate.id, delegatedBy: caller.agent.id, delegation: { depth: chain.length, chain }, scope: scope ? [...scope] : null };
  }

  /** The requested scope if it only narrows the caller's, else the caller's own. */
  private scopeOf(caller: AuthenticatedAgent, requested: string[] | undefined): readonly string[] | undefined {
    const parent = caller.claims.scope;
    if (requested === undefined) return parent;
    const unique = [...new Set(requested)];
    const problem = scopeProblem(unique, parent);
    if (problem !== undefined) throw AppError.invalid(problem);
    return unique;
  }

  /** The requested lifetime if the token it makes expires no later than the caller's, else what is left of the caller's. */
  private lifetimeOf(caller: AuthenticatedAgent, ttl: string | undefined, nowMs: number): number {
    const parentExpMs = caller.claims.exp * 1000;
    if (ttl === undefined) {
      if (parentExpMs - nowMs < 1000) throw AppError.invalid('the delegating token expires in less than a second');
      // A second more than is left, so whole-second rounding cannot land short; `notAfter` caps it at the parent's expiry.
      return parentExpMs - nowMs + 1000;
    }
    const ttlMs = parseDuration(ttl);
    if (ttlMs < 1000) throw AppError.invalid('ttl must be at least 1s');
    if (Math.floor(nowMs / 1000) + Math.round(ttlMs / 1000) > caller.claims.exp) {
      throw AppError.invalid(`ttl ${ttl} would outlive the delegating token, which expires at ${new Date(parentExpMs).toISOString()}`);
    }
    return ttlMs;
  }

  private async delegateAgent(orgId: string, agentId: string): Promise<AgentSnapshot> {
    const agent = await this.agents.get(agentId);
    if (agent === null || agent.orgId !== orgId) throw AppError.notFound('agent', agentId);
    if (agent.revoked) throw new AppError(ErrorCode.AgentRevoked, `agent ${agentId} is revoked and cannot be delegated to`);
    return agent;
  }
}
