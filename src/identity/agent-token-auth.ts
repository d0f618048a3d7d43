import { applyDecorators, CanActivate, createParamDecorator, ExecutionContext, Injectable, UseGuards } from '@nestjs/common';
import { ApiSecurity, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { Request } from 'express';
import { AGENT_TOKEN_SCHEME, Public } from '../common/auth-decorators';
import { ErrorBody } from '../common/error-body.dto';
import { AgentAuthenticator, AuthenticatedAgent } from './agent-authenticator';

type AgentRequest = Request & { agent?: AuthenticatedAgent };

/** Authenticates the route's caller by its agent token (with its delegation chain) and keeps it on the request. */
@Injectable()
export class AgentTokenGuard implements CanActivate {
  constructor(private readonly authenticator: AgentAuthenticator) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<AgentRequest>();
    request.agent = await this.authenticator.authenticate(request.header('authorization'));
    return true;
  }
}

/**
 * The route needs an agent token (`Authorization: Bearer`). The global guard knows admin
 * tokens only, so the route is open to it and this route guard does the proving.
 */
export const AgentTokenAuth = () =>
  applyDecorators(
    Public(),
    UseGuards(AgentTokenGuard),
    ApiSecurity(AGENT_TOKEN_SCHEME),
    ApiUnauthorizedResponse({ description: 'Missing, invalid, expired or revoked agent token (or a revoked agent in its delegation chain)', type: ErrorBody }),
  );

/** The agent AgentTokenGuard authenticated. */
export const CurrentAgent = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  return context.switchToHttp().getRequest<AgentRequest>().agent;
});
