import { Inject, Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { AGENT_SOURCE, AgentSnapshot, AgentSource } from './decision-sources';
import { rankOfValue } from '../policy-engine/tiers';
import type { DelegationFacts } from '../policy-engine/types';
import { ActorClaim, AgentTokenClaims, InvalidTokenError } from './agent-token-claims';
import { AgentTokenVerifier } from './agent-token-verifier';

/** The delegation a principal acts under, with the scope its token is limited to. */
export interface PrincipalDelegation extends DelegationFacts {
  /** Action globs the token allows (the `scope` claim); undefined when it is not limited. */
  scope?: readonly string[];
  /**
   * The agents the acting one acts for, original delegator first, each with the chain's lowest
   * tier: a delegated request is decided for each of them too (DecisionService).
   */
  delegators?: readonly AgentSnapshot[];
}

/**
 * Who a decision is made for: the agent's current record and the delegation it acts under. A
 * delegated agent's record carries the lowest trust tier of its chain.
 */
export interface Principal {
  agent: AgentSnapshot;
  delegation: PrincipalDelegation;
}

/** An agent proven by its token, with its current record. */
export interface AuthenticatedAgent extends Principal {
  claims: AgentTokenClaims;
}

/** Depth 1: the agent acts for itself. */
export const DIRECT: DelegationFacts = Object.freeze({ depth: 1, chain: Object.freeze([]) as readonly string[] });

/**
 * Authenticates `Authorization: Bearer <agent token>`: signature, expiry and issuer (once per
 * token, AgentTokenVerifier), then the agent's current record (exists, same organization, not
 * revoked) on every request, so a revocation or a tier change holds whatever the token says.
 * A delegated token is checked the same way for every agent of its chain: revoking any
 * delegator ends every token delegated from it (records are cached, so this is cheap).
 */
@Injectable()
export class AgentAuthenticator {
  constructor(
    private readonly tokens: AgentTokenVerifier,
    @Inject(AGENT_SOURCE) private readonly agents: AgentSource,
  ) {}

  /** The authenticated agent, or a 401 AppError. */
  async authenticate(authorization: string | undefined, nowMs = Date.now()): Promise<AuthenticatedAgent> {
    const token = bearerToken(authorization);
    let claims: AgentTokenClaims;
    try {
      claims = await this.tokens.verify(token, nowMs);
    } catch (error) {
      throw unauthorized(error);
    }
    const agent = await this.agents.get(claims.sub);
    if (agent === null || agent.orgId !== claims.org) throw new AppError(ErrorCode.Unauthorized, 'Invalid or expired token');
    if (agent.revoked) throw new AppError(ErrorCode.Unauthorized, 'Agent has been revoked');
    if (!claims.act) return { agent, claims, delegation: claims.scope === undefined ? DIRECT : { ...DIRECT, scope: claims.scope } };
    const chain = chainOf(claims.sub, claims.act);
    const delegators = await this.delegatorsOf(chain, claims.org);
    const tier = lowestTier([...delegators, agent]);
    const delegation: PrincipalDelegation = { depth: chain.length, chain, delegators: delegators.map((delegator) => withTier(delegator, tier)) };
    if (claims.scope !== undefined) delegation.scope = claims.scope;
    return { agent: withTier(agent, tier), claims, delegation };
  }

  /**
   * The delegators of a chain (all but the acting agent), original first: each must still exist,
   * in the same organization, unrevoked, else a 401.
   */
  async delegatorsOf(chain: readonly string[], orgId: string): Promise<AgentSnapshot[]> {
    const delegators: AgentSnapshot[] = [];
    for (const id of chain.slice(0, -1)) {
      const delegator = await this.agents.get(id);
      if (delegator === null || delegator.orgId !== orgId) throw new AppError(ErrorCode.Unauthorized, 'Invalid or expired token');
      if (delegator.revoked) throw new AppError(ErrorCode.Unauthorized, `Delegating agent ${id} has been revoked`);
      delegators.push(delegator);
    }
    return delegators;
  }
}

/** Agent ids from the original delegator to the acting agent. */
export function chainOf(agentId: string, act: ActorClaim): string[] {
  const delegators: string[] = [];
  for (let actor: ActorClaim | undefined = act; actor; actor = actor.act) delegators.unshift(actor.sub);
  return [...delegators, agentId];
}

/** The lowest trust tier among these agents (an unknown tier name counts as the lowest). */
export function lowestTier(agents: readonly AgentSnapshot[]): string {
  let lowest = agents[0];
  for (const agent of agents) if (rankOfValue(agent.trustTier) < rankOfValue(lowest.trustTier)) lowest = agent;
  return lowest.trustTier;
}

/** The agent's record as decisions see it under a delegation: the chain's lowest tier, the agent's own everything else. */
function withTier(agent: AgentSnapshot, tier: string): AgentSnapshot {
  if (agent.trustTier === tier) return agent;
  return { ...agent, trustTier: tier, facts: Object.freeze({ ...agent.facts, trust_tier: tier }) };
}

function bearerToken(authorization: string | undefined): string {
  if (authorization === undefined || authorization === '') throw new AppError(ErrorCode.Unauthorized, 'Missing Authorization: Bearer <agent token>');
  if (authorization.length < 8 || authorization.slice(0, 7).toLowerCase() !== 'bearer ') {
    throw new AppError(ErrorCode.Unauthorized, 'Authorization must be: Bearer <agent token>');
  }
  return authorization.slice(7).trim();
}

function unauthorized(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const expired = error instanceof InvalidTokenError && error.message === 'token expired';
  return new AppError(ErrorCode.Unauthorized, expired ? 'Token has expired' : 'Invalid or expired token');
}
