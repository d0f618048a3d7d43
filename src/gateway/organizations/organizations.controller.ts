import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { OrganizationView } from './organizations.dto';
import { OrganizationsService } from './organizations.service';
import { periodOf, UsageMeter } from './usage-meter';
import { PLANS } from '../../core/config/plans';

@ApiTags('organization')
@AdminAuth()
@Controller('admin/organization')
export class OrganizationsController {
  constructor(
    private readonly organizations: OrganizationsService,
    private readonly usage: UsageMeter,
  ) {}

  @Get()
  @ApiOperation({ summary: 'The calling organization: plan, limits and usage' })
  @ApiOkResponse({ type: OrganizationView })
  async get(@CurrentAdmin() admin: AdminPrincipal): Promise<OrganizationView> {
    const organization = await this.organizations.get(admin.orgId);
    const counts = await this.organizations.counts(admin.orgId);
    const now = Date.now();
    return {
      id: organization.id,
      name: organization.name,
      plan: organization.plan,
      limits: PLANS[organization.plan].limits,
      usage: { ...counts, policyChecksThisMonth: await this.usage.usedThisMonth(admin.orgId, now), period: periodOf(now) },
      billingEmail: organization.billingEmail,
      customerId: organization.customerId,
    };
  }
}
