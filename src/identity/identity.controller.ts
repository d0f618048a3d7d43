import { Body, Controller, Get, Param, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiConflictResponse, ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, AgentAuth, CurrentAdmin, CurrentAgent } from '../common/auth-decorators';
import { ErrorBody } from '../common/error-body.dto';
import type { AuthenticatedAgent } from './agent-authenticator';
import { AgentIdentityService } from './agent-identity.service';
import { DelegationService } from './delegation.service';
import { DelegatedTokenView, DelegateDto, IdentityView, TrustView } from './identity.dto';

@ApiTags('identity')
@Controller('api/v1')
export class IdentityController {
  constructor(
    private readonly identities: AgentIdentityService,
    private readonly delegations: DelegationService,
  ) {}

  @Post('identity/delegate')
  @AgentAuth()
  @ApiOperation({
    summary: 'Delegate: a token for another agent of the organization to act on the caller’s behalf (RFC 8693 `act`, nested for chains)',
    description: 'The token expires no later than the caller’s and its scope (action globs) can only narrow the caller’s; outside it, requests are denied with policy `delegation-scope` before any policy is consulted.',
  })
  @ApiCreatedResponse({ type: DelegatedTokenView })
  @ApiBadRequestResponse({ description: 'ttl past the caller’s expiry, a scope glob outside the caller’s scope, a cycle, or a malformed field', type: ErrorBody })
  @ApiNotFoundResponse({ description: 'No such agent in the caller’s organization', type: ErrorBody })
  @ApiConflictResponse({ description: 'agent_revoked: the delegate is revoked', type: ErrorBody })
  delegate(@CurrentAgent() caller: AuthenticatedAgent, @Body() dto: DelegateDto): Promise<DelegatedTokenView> {
    return this.delegations.delegate(caller, dto);
  }

  @Get('identity/:agentId')
  @AdminAuth()
  @ApiOperation({ summary: 'Identity description of an agent: tier (identity vocabulary), tags, organization, issuer, signing key id, revocation' })
  @ApiOkResponse({ type: IdentityView })
  @ApiNotFoundResponse({ description: 'No such agent in this organization', type: ErrorBody })
  identity(@CurrentAdmin() admin: AdminPrincipal, @Param('agentId') agentId: string): Promise<IdentityView> {
    return this.identities.describe(admin.orgId, agentId);
  }

  @Get('trust/:agentId')
  @AdminAuth()
  @ApiOperation({ summary: 'Trust score 0-1000 and the factors that made it: tier, age, deny ratio and rate-limit hits of the last 7 days (docs/trust.md)' })
  @ApiOkResponse({ type: TrustView })
  @ApiNotFoundResponse({ description: 'No such agent in this organization', type: ErrorBody })
  trust(@CurrentAdmin() admin: AdminPrincipal, @Param('agentId') agentId: string): Promise<TrustView> {
    return this.identities.trust(admin.orgId, agentId);
  }
}
