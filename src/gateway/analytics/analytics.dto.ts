import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ToWholeNumber } from '../../core/common/validation';
import { Allow, IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';
import { ANALYTICS_TIERS } from '../audit/audit-rollups';
import { PERIODS } from '../audit/audit.dto';

export const BUCKETS = ['hour', 'day'] as const;
export type Bucket = (typeof BUCKETS)[number];
export const AGENT_SORTS = ['requests', 'denied', 'latency'] as const;
export type AgentSort = (typeof AGENT_SORTS)[number];

const PERIOD_DOC =
  'The last 24 hours, 7 days or 30 days, in whole UTC hours: the current hour and the 23 (167, 719) before it. Anything else is 400 `invalid_period`.';

export class AnalyticsQueryDto {
  // Checked by the service, which answers `invalid_period` rather than `invalid_request`.
  @ApiPropertyOptional({ enum: PERIODS, default: '24h', description: PERIOD_DOC })
  @Allow()
  period?: unknown;
}

export class HeatmapQueryDto {
  @ApiPropertyOptional({ enum: PERIODS, default: '30d', description: PERIOD_DOC })
  @Allow()
  period?: unknown;
}

export class TimeseriesQueryDto extends AnalyticsQueryDto {
  @ApiPropertyOptional({ enum: BUCKETS, default: 'hour', description: 'Bucket size; buckets start on the UTC hour or UTC midnight' })
  @IsOptional()
  @IsIn(BUCKETS, { message: `bucket must be one of: ${BUCKETS.join(', ')}` })
  bucket?: Bucket;
}

export class AgentsQueryDto extends AnalyticsQueryDto {
  @ApiPropertyOptional({ enum: AGENT_SORTS, default: 'requests', description: 'Most requests, most denials, or slowest average latency first' })
  @IsOptional()
  @IsIn(AGENT_SORTS, { message: `sort must be one of: ${AGENT_SORTS.join(', ')}` })
  sort?: AgentSort;

  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 20 })
  @IsOptional()
  @ToWholeNumber()
  @IsInt({ message: 'limit must be a whole number from 1 to 100' })
  @Min(1, { message: 'limit must be a whole number from 1 to 100' })
  @Max(100, { message: 'limit must be a whole number from 1 to 100' })
  limit?: number;
}

export class OverviewTrends {
  @ApiProperty({
    description:
      'Percent change of totalRequests against the prior period of the same length. Zero baseline: 0 when both periods had no requests, 100 when only the current one had.',
    example: 12.5,
  })
  totalRequests: number;

  @ApiProperty({ description: 'Change of enforcementRate in percentage points (a period with no requests has rate 0)', example: -1.25 })
  enforcementRate: number;

  @ApiProperty({ description: 'Change of activeAgents', example: 2 })
  activeAgents: number;

  @ApiProperty({ description: 'Change of avgLatencyMs; negative = faster (a period with no latency recorded has 0)', example: -0.4 })
  avgLatencyMs: number;
}

export class OverviewView {
  @ApiProperty({ enum: PERIODS }) period: string;
  @ApiProperty({ description: 'Decisions in the period, from every entry point (proxy, PDP, check, sidecar, MCP)' }) totalRequests: number;
  @ApiProperty({ description: 'Percent (0-100, two decimals) of requests where a policy rule fired; 0 with no requests' }) enforcementRate: number;
  @ApiProperty({ description: 'Agents with at least one decision in the period' }) activeAgents: number;
  @ApiProperty({ description: 'Mean request latency, milliseconds (three decimals); the decision latency where no request latency was recorded (PDP, check); 0 with none' })
  avgLatencyMs: number;
  @ApiProperty({ type: OverviewTrends }) trends: OverviewTrends;
}

export class TimeseriesPoint {
  @ApiProperty({ description: 'Bucket start, ISO 8601 UTC', example: '2026-11-24T08:00:00.000Z' }) time: string;
  @ApiProperty() allowed: number;
  @ApiProperty() denied: number;
}

export class TimeseriesView {
  @ApiProperty({ enum: PERIODS }) period: string;
  @ApiProperty({ enum: BUCKETS }) bucket: string;
  @ApiProperty({ type: [TimeseriesPoint], description: 'Every bucket of the period, oldest first, empty ones with zeros' }) data: TimeseriesPoint[];
}

export class AgentStat {
  @ApiProperty() id: string;
  @ApiProperty({ nullable: true, type: String, description: 'Name on its latest decision' }) name: string | null;
  @ApiProperty({ nullable: true, enum: ANALYTICS_TIERS, description: 'Tier on its latest decision' }) trustTier: string | null;
  @ApiProperty() requests: number;
  @ApiProperty() allowed: number;
  @ApiProperty() denied: number;
  @ApiProperty({ description: 'Milliseconds, three decimals; 0 with no latency recorded' }) avgLatencyMs: number;
  @ApiProperty({ description: 'Time of its latest decision, ISO 8601 UTC' }) lastActive: string;
}

export class AgentsView {
  @ApiProperty({ enum: PERIODS }) period: string;
  @ApiProperty({ enum: AGENT_SORTS }) sort: string;
  @ApiProperty({ type: [AgentStat] }) agents: AgentStat[];
}

export class PolicyStat {
  @ApiProperty() name: string;
  @ApiProperty({ description: 'Decisions this policy made (the default decision, when no policy applies, is not a policy)' }) triggered: number;
  @ApiProperty({ description: 'Percent (0-100, two decimals) of them allowed' }) allowRate: number;
  @ApiProperty({ description: 'Percent (0-100, two decimals) of them denied' }) denyRate: number;
  @ApiProperty({ description: 'Its most frequent action (ties: alphabetically first)' }) topAction: string;
}

export class PoliciesView {
  @ApiProperty({ enum: PERIODS }) period: string;
  @ApiProperty({ type: [PolicyStat], description: 'Most triggered first' }) policies: PolicyStat[];
}

export class ShadowHit {
  @ApiProperty({ description: 'An agent id or an action' }) key: string;
  @ApiPropertyOptional({ description: 'The agent’s name, for agents' }) name?: string;
  @ApiProperty({ description: 'Decisions the shadow policy would have denied' }) count: number;
}

export class ShadowPolicyStat {
  @ApiProperty() name: string;
  @ApiProperty({ description: 'Decisions the shadow policy applied to (was evaluated on)' }) evaluated: number;
  @ApiProperty({ description: 'Of them, those it would have denied (or held for approval)' }) wouldDeny: number;
  @ApiProperty({ description: 'Percent (0-100, two decimals) of evaluated it would have denied' }) wouldDenyRate: number;
  @ApiProperty({ description: 'Decisions allowed in force that it would have denied: what putting it in force changes' }) wouldFlip: number;
  @ApiProperty({ type: [ShadowHit], description: 'The agents it would have denied most (at most 5)' }) topAgents: ShadowHit[];
  @ApiProperty({ type: [ShadowHit], description: 'The actions it would have denied most (at most 5)' }) topActions: ShadowHit[];
}

export class ShadowPoliciesView {
  @ApiProperty({ enum: PERIODS }) period: string;
  @ApiProperty({ type: [ShadowPolicyStat], description: 'By name' }) policies: ShadowPolicyStat[];
}

export class DelegationPair {
  @ApiProperty({ description: 'Delegating agent (its name; its id if the agent no longer exists)' }) fromAgent: string;
  @ApiProperty({ description: 'Agent delegated to (name, or id)' }) toAgent: string;
  @ApiProperty() count: number;
}

export class DelegationsView {
  @ApiProperty({ enum: PERIODS }) period: string;
  @ApiProperty({ description: 'Delegated requests: decisions whose delegation chain has depth 2 or more' }) totalChains: number;
  @ApiProperty({ description: 'Mean delegation depth over all decisions (a direct request has depth 1), two decimals; 0 with no requests' })
  avgDepth: number;
  @ApiProperty({ description: 'Delegated requests that were denied' }) blockedChains: number;
  @ApiProperty({ type: [DelegationPair], description: 'The 10 most frequent links (delegator → delegate) of the chains' }) topPairs: DelegationPair[];
}

export class TierStat {
  @ApiProperty({ enum: ANALYTICS_TIERS }) tier: string;
  @ApiProperty({ description: 'Agents that made decisions at this tier' }) agentCount: number;
  @ApiProperty({ description: 'Decisions made at this tier' }) requestCount: number;
  @ApiProperty({ description: 'Percent (0-100, two decimals) of the period’s requests made at this tier' }) pct: number;
}

export class TrustDistributionView {
  @ApiProperty({ enum: PERIODS }) period: string;
  @ApiProperty({ type: [TierStat], description: 'Every tier, lowest first' }) tiers: TierStat[];
}

export class HeatmapCell {
  @ApiProperty({ minimum: 0, maximum: 6, description: '0 = Sunday … 6 = Saturday (UTC)' }) dayOfWeek: number;
  @ApiProperty({ minimum: 0, maximum: 23, description: 'UTC' }) hourOfDay: number;
  @ApiProperty({ description: 'Milliseconds, three decimals; 0 with no latency recorded' }) avgLatencyMs: number;
  @ApiProperty({ description: 'Decisions in the cell' }) count: number;
}

export class LatencyHeatmapView {
  @ApiProperty({ enum: PERIODS }) period: string;
  @ApiProperty({ type: [HeatmapCell], description: 'Cells with at least one decision, by day then hour' }) cells: HeatmapCell[];
}
