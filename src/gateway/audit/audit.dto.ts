import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ToWholeNumber } from '../../core/common/validation';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { IsTimestamp } from '../../core/common/is-timestamp';
import { AUDIT_SOURCES } from '../../core/audit-record/audit-record';

export const PERIODS = ['24h', '7d', '30d'] as const;
export type Period = (typeof PERIODS)[number];

export class AuditQueryDto {
  @ApiPropertyOptional({ minimum: 1, maximum: 1000, default: 50 })
  @IsOptional()
  @ToWholeNumber()
  @IsInt()
  @Min(1)
  @Max(1000)
  limit?: number;

  @ApiPropertyOptional({ enum: ['allow', 'deny'] })
  @IsOptional()
  @IsIn(['allow', 'deny'])
  decision?: 'allow' | 'deny';

  @ApiPropertyOptional({ description: 'Earliest timestamp, ISO 8601 (inclusive; without a zone: UTC); not later than to (400)', example: '2026-11-20T00:00:00.000Z' })
  @IsOptional()
  @IsTimestamp()
  from?: string;

  @ApiPropertyOptional({ description: 'Latest timestamp, ISO 8601 (exclusive; without a zone: UTC)', example: '2026-11-21T00:00:00.000Z' })
  @IsOptional()
  @IsTimestamp()
  to?: string;

  @ApiPropertyOptional({ description: 'Only entries of this agent' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  agentId?: string;

  @ApiPropertyOptional({ description: 'Only actions starting with this prefix, e.g. `write:` or `admin:`' })
  @IsOptional()
  @IsString()
  @MaxLength(512)
  action?: string;

  @ApiPropertyOptional({ enum: AUDIT_SOURCES })
  @IsOptional()
  @IsIn([...AUDIT_SOURCES])
  source?: string;

  @ApiPropertyOptional({ description: 'The `nextCursor` of the previous page' })
  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9_-]{1,200}$/, { message: 'cursor must be a nextCursor value returned by this endpoint' })
  cursor?: string;
}

export class AuditStatsQueryDto {
  @ApiPropertyOptional({ enum: PERIODS, default: '24h' })
  @IsOptional()
  @IsIn(PERIODS, { message: `period must be one of: ${PERIODS.join(', ')}` })
  period?: Period;
}

export class AuditVerifyQueryDto {
  @ApiPropertyOptional({ description: 'Verify entries from this timestamp (ISO 8601, without a zone: UTC; not later than to, else 400); default: the oldest kept' })
  @IsOptional()
  @IsTimestamp()
  from?: string;

  @ApiPropertyOptional({ description: 'Verify entries before this timestamp (ISO 8601, without a zone: UTC); default: up to the chain head' })
  @IsOptional()
  @IsTimestamp()
  to?: string;
}

export class AuditEntryView {
  @ApiProperty({ example: 'aud_5f0c…' }) id: string;
  @ApiProperty({ example: '2026-11-21T10:15:30.123Z' }) timestamp: string;
  @ApiProperty({ description: 'Position in the organization hash chain' }) seq: number;
  @ApiProperty({ enum: AUDIT_SOURCES }) source: string;
  @ApiProperty({ enum: ['decision', 'admin'] }) kind: string;
  @ApiProperty({ nullable: true, type: String }) traceId: string | null;
  @ApiProperty({ nullable: true, type: String }) agentId: string | null;
  @ApiProperty({ nullable: true, type: String }) agentName: string | null;
  @ApiProperty({ nullable: true, type: String }) trustTier: string | null;
  @ApiProperty({ example: 'write:orders' }) action: string;
  @ApiProperty({ nullable: true, type: String, example: 'POST' }) method: string | null;
  @ApiProperty({ nullable: true, type: String, example: '/orders' }) path: string | null;
  @ApiProperty({ enum: ['allow', 'deny'] }) decision: string;
  @ApiProperty({ description: 'False when MODE=audit let a would-be denial through' }) enforced: boolean;
  @ApiProperty() rateLimited: boolean;
  @ApiProperty({ nullable: true, type: String }) policyName: string | null;
  @ApiProperty({ nullable: true, type: String }) rule: string | null;
  @ApiProperty({ nullable: true, type: String }) reason: string | null;
  @ApiProperty({ nullable: true, type: Number, description: 'Whole request, milliseconds' }) latencyMs: number | null;
  @ApiProperty({ nullable: true, type: Number, description: 'Policy decision only, milliseconds' }) decisionLatencyMs: number | null;
  @ApiProperty({ nullable: true, type: Number, description: 'Status the caller received; 499 when the caller closed the connection before its answer was complete' }) status: number | null;
  @ApiProperty({ nullable: true, type: Number }) upstreamStatus: number | null;
  @ApiProperty({ nullable: true, type: [String] }) delegationChain: string[] | null;
  @ApiProperty({ nullable: true, type: Object, description: 'Decision input, with secret-named arguments redacted' }) input: unknown;
  @ApiProperty({ nullable: true, type: Object, description: 'Admin changes: actor, previous and new values. Decisions: `alerts: [{policy, rule, reason}]` when alert rules fired and `rateLimit: {limit, retryAfterSeconds}` when a rate limit tripped, else null. Outcomes: eventId, decisionId, durationMs, resultSummary' }) details: unknown;
}

export class AuditPage {
  @ApiProperty({ type: [AuditEntryView] }) entries: AuditEntryView[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as `cursor` for the next page; null on the last page' })
  nextCursor: string | null;
}

export class AuditStats {
  @ApiProperty() total: number;
  @ApiProperty() allowed: number;
  @ApiProperty() denied: number;
  @ApiProperty({ enum: PERIODS }) period: string;
}

export class ChainBreak {
  @ApiProperty() seq: number;
  @ApiProperty({ nullable: true, type: String }) id: string | null;
  @ApiProperty({ enum: ['hash_mismatch', 'prev_hash_mismatch', 'missing_entries', 'duplicate_entry', 'head_mismatch'] }) problem: string;
  @ApiProperty() message: string;
}

export class AuditVerification {
  @ApiProperty() ok: boolean;
  @ApiProperty({ description: 'Entries checked' }) checked: number;
  @ApiProperty({ nullable: true, type: Number }) firstSeq: number | null;
  @ApiProperty({ nullable: true, type: Number }) lastSeq: number | null;
  @ApiProperty({ nullable: true, type: ChainBreak }) brokenAt: ChainBreak | null;
}
