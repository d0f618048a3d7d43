import { Injectable } from '@nestjs/common';
import { AgentDirectory } from '../agents/agent-directory';
import { AuditService } from '../audit/audit.service';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import type { AgentSnapshot } from '../../core/decision/decision-sources';
import { parseDuration } from '../../core/policy-engine/duration';
import { AgentAuthenticator, AuthenticatedAgent, chainOf, lowestTier } from '../../core/decision/agent-authenticator';
import type { ActorClaim } from '../../core/decision/agent-token-claims';
import { AgentTokenService } from '../signing-keys/agent-token.service';
import { DelegationGrants, GrantClaims } from './delegation-grant';
import { scopeProblem } from '../../core/decision/delegation-scope';
import { DelegationGrantView, DelegateDto, TOKEN_EXCHANGE_GRANT_TYPE, TokenExchangeDto, TokenExchangeView } from './identity.dto';

/** Longest chain a token may carry, original delegator and acting agent included. */
export const MAX_DELEGATION_DEPTH = 8;

/**
 * Delegation in two steps (RFC 8693 token exchange, docs/security.md "Identity and delegation"): a delegator
 * asks for a grant naming the delegate; the delegate redeems it with its own agent token as
 * `actor_token` and gets a token acting on the delegator's behalf (`act`). The delegator never
 * holds a token that acts as the delegate, so delegating to a more trusted agent gains it
 * nothing. The token alone proves the chain, so its limits travel in it: it expires no later
 * than its parent and the delegate's own token, and its scope lies within its parent's. Each
 * decision for it is made with the lowest trust tier of its chain (AgentAuthenticator).
 */
@Injectable()
export class DelegationService {
  constructor(
    private readonly agents: AgentDirectory,
    private readonly tokens: AgentTokenService,
    private readonly grants: DelegationGrants,
    private readonly authenticator: AgentAuthenticator,
    private readonly audit: AuditService,
  ) {}

  /** A grant for `dto.agentId` to act on behalf of the caller (and of whoever the caller acts for). */
  async delegate(caller: AuthenticatedAgent, dto: DelegateDto, nowMs = Date.now()): Promise<DelegationGrantView> {
    const parentChain = caller.delegation.depth > 1 ? caller.delegation.chain : [caller.agent.id];
    if (parentChain.includes(dto.agentId)) throw AppError.invalid(`agent ${dto.agentId} is already in the delegation chain (${parentChain.join(' > ')})`);
    if (parentChain.length + 1 > MAX_DELEGATION_DEPTH) throw AppError.invalid(`a delegation chain holds at most ${MAX_DELEGATION_DEPTH} agents`);
    const scope = this.scopeOf(caller, dto.scope);
    const exp = this.expiryOf(caller, dto.ttl, nowMs);
    const delegate = await this.delegateAgent(caller.agent.orgId, dto.agentId);
    const grant = await this.grants.sign({ sub: caller.agent.id, org: caller.agent.orgId, act: caller.claims.act, mayAct: delegate.id, scope: scope && [...scope], exp });
    const chain = [...parentChain, delegate.id];
    const expiresAt = new Date(exp * 1000).toISOString();
    this.audit.recordAdminEvent(
      { orgId: caller.agent.orgId, tokenId: `agent:${caller.agent.id}` },
      { action: 'identity.delegate', agentId: delegate.id, agentName: delegate.name, details: { delegatedBy: caller.agent.id, chain, scope: scope ?? null, expiresAt } },
    );
    return { grant, expiresAt, agentId: delegate.id, delegatedBy: caller.agent.id, delegation: { depth: chain.length, chain }, scope: scope ? [...scope] : null };
  }

  /**
   * Token exchange: the delegate named by the grant, proven by its own (undelegated) agent
   * token, gets the delegated token. Every agent of the chain must still be active.
   */
  async redeem(dto: TokenExchangeDto, nowMs = Date.now()): Promise<TokenExchangeView> {
    if (dto.grant_type !== TOKEN_EXCHANGE_GRANT_TYPE) throw AppError.invalid(`grant_type must be ${TOKEN_EXCHANGE_GRANT_TYPE}`);
    const grant = await this.grants.verify(dto.subject_token);
    const actor = await this.actorOf(dto.actor_token, grant, nowMs);
    const act: ActorClaim = grant.act ? { sub: grant.sub, act: grant.act } : { sub: grant.sub };
    const chain = chainOf(actor.agent.id, act);
    const delegators = await this.authenticator.delegatorsOf(chain, grant.org);
    const trustTier = lowestTier([...delegators, actor.agent]);
    const notAfter = Math.min(grant.exp, actor.claims.exp);
    // A second more than is left, so whole-second rounding cannot land short; `notAfter` caps it.
    const issued = await this.tokens.issue({ ...actor.agent, trustTier }, notAfter * 1000 - nowMs + 1000, act, { scope: grant.scope, notAfter });
    this.audit.recordAdminEvent(
      { orgId: grant.org, tokenId: `agent:${actor.agent.id}` },
      { action: 'identity.token_exchange', agentId: actor.agent.id, agentName: actor.agent.name, details: { chain, trustTier, scope: grant.scope ?? null, expiresAt: issued.expiresAt.toISOString() } },
    );
    return {
      access_token: issued.token,
      issued_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      token_type: 'Bearer',
      expires_in: Math.max(0, Math.round((issued.expiresAt.getTime() - nowMs) / 1000)),
      expiresAt: issued.expiresAt.toISOString(),
      agentId: actor.agent.id,
      trustTier,
      delegation: { depth: chain.length, chain },
      scope: grant.scope ?? null,
    };
  }

  /** The delegate the grant names, proven by its own agent token. */
  private async actorOf(actorToken: string, grant: GrantClaims, nowMs: number): Promise<AuthenticatedAgent> {
    let actor: AuthenticatedAgent;
    try {
      actor = await this.authenticator.authenticate(`Bearer ${actorToken}`, nowMs);
    } catch (error) {
      const why = error instanceof AppError ? error.message : 'invalid token';
      throw AppError.invalid(`actor_token is not a valid agent token: ${why}`);
    }
    if (actor.delegation.depth > 1) throw AppError.invalid('actor_token must be the delegate’s own agent token, not a delegated one');
    if (actor.agent.id !== grant.mayAct || actor.agent.orgId !== grant.org) {
      throw new AppError(ErrorCode.Forbidden, 'The grant names another agent: only the delegate it names can redeem it, with its own token');
    }
    return actor;
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

  /** The grant's expiry (seconds): the requested lifetime if it ends no later than the caller's token, else the caller's expiry. */
  private expiryOf(caller: AuthenticatedAgent, ttl: string | undefined, nowMs: number): number {
    const parentExpMs = caller.claims.exp * 1000;
    if (ttl === undefined) {
      if (parentExpMs - nowMs < 1000) throw AppError.invalid('the delegating token expires in less than a second');
      return caller.claims.exp;
    }
    const ttlMs = parseDuration(ttl);
    if (ttlMs < 1000) throw AppError.invalid('ttl must be at least 1s');
    const exp = Math.floor(nowMs / 1000) + Math.round(ttlMs / 1000);
    if (exp > caller.claims.exp) {
      throw AppError.invalid(`ttl ${ttl} would outlive the delegating token, which expires at ${new Date(parentExpMs).toISOString()}`);
    }
    return exp;
  }

  private async delegateAgent(orgId: string, agentId: string): Promise<AgentSnapshot> {
    const agent = await this.agents.get(agentId);
    if (agent === null || agent.orgId !== orgId) throw AppError.notFound('agent', agentId);
    if (agent.revoked) throw new AppError(ErrorCode.AgentRevoked, `agent ${agentId} is revoked and cannot be delegated to`);
    return agent;
  }
}
