import { Inject, Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { AGENT_SOURCE, AgentSnapshot, AgentSource } from '../decisions/decision-sources';
import type { DelegationFacts } from '../policy-engine/types';
import { ActorClaim, AgentTokenClaims, InvalidTokenError } from './agent-token-claims';
import { AgentTokenVerifier } from './agent-token-verifier';

/** The delegation a principal acts under, with the scope its token is limited to. */
export interface PrincipalDelegation extends DelegationFacts {
  /** Action globs the token allows (the `scope` claim); undefined when it is not limited. */
  scope?: readonly string[];
}

/** Who a decision is made for: the agent's current record and the delegation it acts under. */
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
    const delegation = claims.act ? delegationOf(claims.sub, claims.act) : DIRECT;
    if (delegation.depth > 1) await this.checkDelegators(delegation.chain, claims.org);
    return { agent, claims, delegation: claims.scope === undefined ? delegation : { ...delegation, scope: claims.scope } };
  }

  /** Every delegator of the chain (all but the acting agent) must still exist, in the same organization, unrevoked. */
  private async checkDelegators(chain: readonly string[], orgId: string): Promise<void> {
    for (const id of chain.slice(0, -1)) {
      const delegator = await this.agents.get(id);
      if (delegator === null || delegator.orgId !== orgId) throw new AppError(ErrorCode.Unauthorized, 'Invalid or expired token');
      if (delegator.revoked) throw new AppError(ErrorCode.Unauthorized, `Delegating agent ${id} has been revoked`);
    }
  }
}

/** Chain from the original delegator to the acting agent; depth 1 means no delegation. */
function delegationOf(agentId: string, act: ActorClaim): DelegationFacts {
  const delegators: string[] = [];
  for (let actor: ActorClaim | undefined = act; actor; actor = actor.act) delegators.unshift(actor.sub);
  const chain = [...delegators, agentId];
  return { depth: chain.length, chain };
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
