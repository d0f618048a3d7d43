import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiConflictResponse, ApiCreatedResponse, ApiForbiddenResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, AgentAuth, CurrentAdmin, CurrentAgent, Public } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import type { AuthenticatedAgent } from '../../core/decision/agent-authenticator';
import { AgentIdentityService } from './agent-identity.service';
import { DelegationService } from './delegation.service';
import { DelegateDto, DelegationGrantView, IdentityView, TokenExchangeDto, TokenExchangeView, TrustView } from './identity.dto';

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
    summary: 'Delegate: a grant for another agent of the organization to act on the caller’s behalf (RFC 8693, nested for chains)',
    description:
      'Answers a grant, not a token: only the delegate can redeem it, at POST /api/v1/identity/token with its own agent token. ' +
      'The redeemed token is decided with the lowest trust tier of its chain and for every agent of it; it expires no later than the caller’s token and its scope (action globs) can only narrow the caller’s; outside it, requests are denied with policy `delegation-scope` before any policy is consulted.',
  })
  @ApiCreatedResponse({ type: DelegationGrantView })
  @ApiBadRequestResponse({ description: 'ttl past the caller’s expiry, a scope glob outside the caller’s scope, a cycle, or a malformed field', type: ErrorBody })
  @ApiNotFoundResponse({ description: 'No such agent in the caller’s organization', type: ErrorBody })
  @ApiConflictResponse({ description: 'agent_revoked: the delegate is revoked', type: ErrorBody })
  delegate(@CurrentAgent() caller: AuthenticatedAgent, @Body() dto: DelegateDto): Promise<DelegationGrantView> {
    return this.delegations.delegate(caller, dto);
  }

  @Post('identity/token')
  @Public()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Token exchange (RFC 8693): the delegate redeems a delegation grant with its own agent token as actor_token',
    description: 'Every agent of the chain must be active. The token acts as the delegate on behalf of the chain (`act`), with the chain’s lowest trust tier.',
  })
  @ApiOkResponse({ type: TokenExchangeView })
  @ApiBadRequestResponse({ description: 'A wrong grant_type, an invalid or expired grant, an invalid actor_token, or a delegated actor_token', type: ErrorBody })
  @ApiForbiddenResponse({ description: 'The actor_token is not the delegate the grant names', type: ErrorBody })
  redeem(@Body() dto: TokenExchangeDto): Promise<TokenExchangeView> {
    return this.delegations.redeem(dto);
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
