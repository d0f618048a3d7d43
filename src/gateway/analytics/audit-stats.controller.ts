import { Controller, Get, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuditStats, AuditStatsQueryDto } from '../audit/audit.dto';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { AnalyticsService } from './analytics.service';

/** `GET /admin/audit/stats`: decision counts, read from the analytics rollups like the Analytics API. */
@ApiTags('audit')
@AdminAuth()
@ApiBadRequestResponse({ description: 'Invalid query parameter (named in the message)', type: ErrorBody })
@Controller('admin/audit')
export class AuditStatsController {
  constructor(private readonly analytics: AnalyticsService) {}

  @Get('stats')
  @ApiOperation({ summary: 'Decision counts of the last 24 h (or `period`)' })
  @ApiOkResponse({ type: AuditStats })
  async stats(@CurrentAdmin() admin: AdminPrincipal, @Query() query: AuditStatsQueryDto): Promise<AuditStats> {
    const period = query.period ?? '24h';
    const counts = await this.analytics.counts(admin.orgId, period);
    return { total: counts.requests, allowed: counts.allowed, denied: counts.denied, period };
  }
}
