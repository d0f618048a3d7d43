import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { AgentTokenClaims, AgentTokenService, InvalidTokenError, ActorClaim } from '../identity/agent-token.service';
import type { DelegationFacts } from '../policy-engine/types';
import { AgentDirectory, AgentSnapshot } from './agent-directory';

/** An agent proven by its token, with its current record. */
export interface AuthenticatedAgent {
  agent: AgentSnapshot;
  claims: AgentTokenClaims;
  delegation: DelegationFacts;
}

const DIRECT: DelegationFacts = Object.freeze({ depth: 1, chain: Object.freeze([]) as readonly string[] });

/**
 * Authenticates `Authorization: Bearer <agent token>`: signature, expiry, issuer, then the
 * agent's current record (exists, same organization, not revoked). Used by the proxy's lean
 * path and by guards alike; sync when the token and the agent are cached.
 */
@Injectable()
export class AgentAuthenticator {
  constructor(
    private readonly tokens: AgentTokenService,
    private readonly directory: AgentDirectory,
  ) {}

  /** Resolves the agent or throws a 401 AppError. */
  authenticate(authorization: string | undefined, nowMs: number): AuthenticatedAgent | Promise<AuthenticatedAgent> {
    const token = bearerToken(authorization);
    let claims: AgentTokenClaims | Promise<AgentTokenClaims>;
    try {
      claims = this.tokens.verify(token, nowMs);
    } catch (error) {
      throw unauthorized(error);
    }
    if (claims instanceof Promise) return claims.then((verified) => this.withAgent(verified), (error: unknown) => Promise.reject(unauthorized(error)));
    return this.withAgent(claims);
  }

  private withAgent(claims: AgentTokenClaims): AuthenticatedAgent | Promise<AuthenticatedAgent> {
    const agent = this.directory.get(claims.sub);
    if (agent instanceof Promise) return agent.then((loaded) => admit(loaded, claims));
    return admit(agent, claims);
  }
}

function admit(agent: AgentSnapshot | null, claims: AgentTokenClaims): AuthenticatedAgent {
  if (agent === null || agent.orgId !== claims.org) throw new AppError(ErrorCode.Unauthorized, 'Invalid or expired token');
  if (agent.revoked) throw new AppError(ErrorCode.Unauthorized, 'Agent has been revoked');
  return { agent, claims, delegation: claims.act ? delegationOf(claims.sub, claims.act) : DIRECT };
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
