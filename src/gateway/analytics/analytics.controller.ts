import { Controller, Get, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { parsePeriod } from './analytics-period';
import {
  AgentsQueryDto,
  AgentsView,
  AnalyticsQueryDto,
  DelegationsView,
  HeatmapQueryDto,
  LatencyHeatmapView,
  OverviewView,
  PoliciesView,
  ShadowPoliciesView,
  TimeseriesQueryDto,
  TimeseriesView,
  TrustDistributionView,
} from './analytics.dto';
import { AnalyticsService } from './analytics.service';

const DEFAULT_AGENTS_LIMIT = 20;

@ApiTags('analytics')
@AdminAuth()
@ApiBadRequestResponse({ description: '`invalid_period` for a bad period; `invalid_request` naming any other bad parameter', type: ErrorBody })
@Controller('admin/analytics')
export class AnalyticsController {
  constructor(private readonly analytics: AnalyticsService) {}

  @Get('overview')
  @ApiOperation({ summary: 'Requests, enforcement rate, active agents and latency of the period, with trends against the prior period' })
  @ApiOkResponse({ type: OverviewView })
  overview(@CurrentAdmin() admin: AdminPrincipal, @Query() query: AnalyticsQueryDto): Promise<OverviewView> {
    return this.analytics.overview(admin.orgId, parsePeriod(query.period, '24h'));
  }

  @Get('timeseries')
  @ApiOperation({ summary: 'Allowed and denied requests per hour or day, every bucket present' })
  @ApiOkResponse({ type: TimeseriesView })
  timeseries(@CurrentAdmin() admin: AdminPrincipal, @Query() query: TimeseriesQueryDto): Promise<TimeseriesView> {
    return this.analytics.timeseries(admin.orgId, parsePeriod(query.period, '24h'), query.bucket ?? 'hour');
  }

  @Get('agents')
  @ApiOperation({ summary: 'Agents by requests, denials or latency' })
  @ApiOkResponse({ type: AgentsView })
  agents(@CurrentAdmin() admin: AdminPrincipal, @Query() query: AgentsQueryDto): Promise<AgentsView> {
    return this.analytics.agents(admin.orgId, parsePeriod(query.period, '24h'), query.sort ?? 'requests', query.limit ?? DEFAULT_AGENTS_LIMIT);
  }

  @Get('policies')
  @ApiOperation({ summary: 'Each policy: decisions made, allow and deny rates, most frequent action' })
  @ApiOkResponse({ type: PoliciesView })
  policies(@CurrentAdmin() admin: AdminPrincipal, @Query() query: AnalyticsQueryDto): Promise<PoliciesView> {
    return this.analytics.policies(admin.orgId, parsePeriod(query.period, '24h'));
  }

  @Get('shadow')
  @ApiOperation({ summary: 'Each shadow policy (mode: shadow): decisions it applied to, its would-deny rate, and the agents and actions it would deny most' })
  @ApiOkResponse({ type: ShadowPoliciesView })
  shadow(@CurrentAdmin() admin: AdminPrincipal, @Query() query: AnalyticsQueryDto): Promise<ShadowPoliciesView> {
    return this.analytics.shadow(admin.orgId, parsePeriod(query.period, '24h'));
  }

  @Get('delegations')
  @ApiOperation({ summary: 'Delegated requests: how many, how deep, how many denied, the most frequent links' })
  @ApiOkResponse({ type: DelegationsView })
  delegations(@CurrentAdmin() admin: AdminPrincipal, @Query() query: AnalyticsQueryDto): Promise<DelegationsView> {
    return this.analytics.delegations(admin.orgId, parsePeriod(query.period, '24h'));
  }

  @Get('trust-distribution')
  @ApiOperation({ summary: 'Agents and requests per trust tier' })
  @ApiOkResponse({ type: TrustDistributionView })
  trustDistribution(@CurrentAdmin() admin: AdminPrincipal, @Query() query: AnalyticsQueryDto): Promise<TrustDistributionView> {
    return this.analytics.trustDistribution(admin.orgId, parsePeriod(query.period, '24h'));
  }

  @Get('latency-heatmap')
  @ApiOperation({ summary: 'Average latency and count by UTC day of week and hour of day (default period 30d)' })
  @ApiOkResponse({ type: LatencyHeatmapView })
  latencyHeatmap(@CurrentAdmin() admin: AdminPrincipal, @Query() query: HeatmapQueryDto): Promise<LatencyHeatmapView> {
    return this.analytics.latencyHeatmap(admin.orgId, parsePeriod(query.period, '30d'));
  }
}
