import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags, ApiTooManyRequestsResponse } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { SidecarTokenAccepted } from '../access/sidecar-token-access';
import { BudgetLeaseRequestDto, BudgetLeaseReturnDto, BudgetLeaseReturnView, BudgetLeaseView } from './budget-leases.dto';
import { BudgetLeasesService } from './budget-leases.service';

@ApiTags('sidecar')
@AdminAuth()
@Controller('api/v1/budget-leases')
export class BudgetLeasesController {
  constructor(private readonly leases: BudgetLeasesService) {}

  @Post()
  @HttpCode(200)
  @SidecarTokenAccepted()
  @ApiOperation({
    summary: 'A slice of a budget for an edge sidecar to spend, offline too',
    description: 'X-Admin-Token: an admin token or a sidecar token. The limit and window come from the organization’s policies in force; the lease holds BUDGET_LEASE_PERCENT of the limit (at least `least`), for BUDGET_LEASE_TTL.',
  })
  @ApiOkResponse({ type: BudgetLeaseView })
  @ApiBadRequestResponse({ description: 'Invalid field (named in the message), or a key of another organization', type: ErrorBody })
  @ApiNotFoundResponse({ description: 'No budget of the policies in force has this key', type: ErrorBody })
  @ApiTooManyRequestsResponse({ description: '`budget_exceeded`: the budget has no room for `least` (`retry_after`)', type: ErrorBody })
  take(@CurrentAdmin() admin: AdminPrincipal, @Body() body: BudgetLeaseRequestDto): Promise<BudgetLeaseView> {
    return this.leases.take(admin, body);
  }

  @Post('return')
  @HttpCode(200)
  @SidecarTokenAccepted()
  @ApiOperation({ summary: 'Returns a lease with what was spent of it; the rest goes back to the budget', description: 'X-Admin-Token: the credential that took the lease.' })
  @ApiOkResponse({ type: BudgetLeaseReturnView })
  @ApiBadRequestResponse({ description: 'Invalid field (named in the message)', type: ErrorBody })
  @ApiNotFoundResponse({ description: 'The lease is not one this credential took', type: ErrorBody })
  giveBack(@CurrentAdmin() admin: AdminPrincipal, @Body() body: BudgetLeaseReturnDto): Promise<BudgetLeaseReturnView> {
    return this.leases.giveBack(admin, body);
  }
}
