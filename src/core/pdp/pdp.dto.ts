import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsNumber, IsObject, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength } from 'class-validator';
import { IsTimestamp } from '../common/is-timestamp';
import { MAX_CALL_COST } from '../policy-engine/policy-validator';

export class CheckAnswerDto {
  @ApiProperty({ enum: ['allow', 'deny'] }) decision: string;
  @ApiProperty({ example: 'Access to system files blocked' }) reason: string;
  @ApiProperty({ example: 'block-sensitive-files' }) policy: string;
  @ApiPropertyOptional({ example: 'system-paths' }) rule?: string;
  @ApiProperty() traceId: string;
  @ApiProperty({ example: 12, description: 'Policy version decided on; moves on every change Subscribe reports' }) policyVersion: number;
  @ApiProperty({ example: 0.021 }) latencyMs: number;
  @ApiProperty({ example: 'aud_3f9a0c1b2d4e5f6a7b8c9d0e', description: 'The audit entry’s id; /v1/audit may name it' }) decisionId: string;
  @ApiProperty({ description: 'False when MODE=audit let a denial through (decision is then allow)' }) enforced: boolean;
  @ApiProperty({ description: 'Whether an SDK may cache this decision (false when a rate limit took part or an alert rule fired)' }) cacheable: boolean;
  @ApiProperty({ example: 30000 }) cacheTtlMs: number;
}

export class PolicyResponseJsonDto {
  @ApiProperty({ enum: ['DECISION_ALLOW', 'DECISION_DENY'] }) decision: string;
  @ApiProperty() reason: string;
  @ApiProperty() policy: string;
  @ApiProperty() rule: string;
  @ApiProperty({ example: '12', description: 'int64, a string in proto3 JSON' }) policyVersion: string;
  @ApiProperty() traceId: string;
  @ApiProperty() latencyMs: number;
  @ApiProperty() decisionId: string;
  @ApiProperty() cacheable: boolean;
  @ApiProperty({ example: '30000' }) cacheTtlMs: string;
  @ApiProperty() enforced: boolean;
}

/** `POST /v1/audit`: what became of a call after the check. */
export class AdapterAuditDto {
  @ApiProperty({ example: 'agent_3f9a0c1b2d4e5f6a7b8c9d0e' })
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  agentId: string;

  @ApiProperty({ example: 'FilePlugin' })
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  plugin: string;

  @ApiProperty({ example: 'ReadFile' })
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  function: string;

  @ApiPropertyOptional({ description: 'The call’s arguments (redacted like every audit payload)' })
  @IsOptional()
  @IsObject()
  arguments?: Record<string, unknown>;

  @ApiProperty({ enum: ['allow', 'deny'], description: 'The decision the call ran under' })
  @IsIn(['allow', 'deny'])
  decision: 'allow' | 'deny';

  @ApiProperty({ example: 42.5, description: 'How long the call ran, in milliseconds' })
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(86_400_000)
  durationMs: number;

  @ApiPropertyOptional({ example: 'read 2 KiB', maxLength: 2048 })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  resultSummary?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MaxLength(256)
  traceId?: string;

  @ApiPropertyOptional({ example: '6f1c…', description: 'The SDK’s id for this event: a replay with the same id is recorded once' })
  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9._:-]{1,128}$/, { message: 'eventId must be 1-128 characters of A-Z a-z 0-9 . _ : -' })
  eventId?: string;

  @ApiPropertyOptional({ example: 'aud_3f9a0c1b2d4e5f6a7b8c9d0e', description: 'The decisionId of the check this outcome follows' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  decisionId?: string;

  @ApiPropertyOptional({
    example: '2026-11-20T10:15:30.123Z',
    description: 'When the call happened (ISO 8601; default: when the gateway receives the event); the entry is stamped with it. At most 5 minutes ahead, and within the organization’s audit retention',
  })
  @IsOptional()
  @IsTimestamp()
  occurredAt?: string;

  @ApiPropertyOptional({
    description: 'The SDK applied a decision from its cache without asking the gateway; `decisionId` (then required) names the decision it reused. Recorded as a decision entry of its own, allow or deny as applied',
  })
  @IsOptional()
  @IsBoolean()
  cached?: boolean;

  @ApiPropertyOptional({ example: 3.5, minimum: 0, maximum: MAX_CALL_COST, description: 'What the call actually cost: it replaces the cost its decision reserved of each budget (docs/policies.md "Budgets"). Needs decisionId.' })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false }, { message: 'cost must be a number' })
  @Min(0, { message: 'cost must not be negative' })
  @Max(MAX_CALL_COST, { message: `cost must be at most ${MAX_CALL_COST}` })
  cost?: number;

  @ApiPropertyOptional({ description: 'The call failed: what its decision reserved of each budget is given back. Needs decisionId.' })
  @IsOptional()
  @IsBoolean()
  failed?: boolean;
}

/**
 * `POST /v1/audit` with many events: refused whole (400 naming `events.<index>.<field>`, nothing
 * recorded) when any is invalid.
 */
export class AdapterAuditBatchDto {
  @ApiProperty({
    type: [AdapterAuditDto],
    minItems: 1,
    maxItems: 500,
    description: 'Each event as the single form, and its `eventId` is required: 1-64 characters of A-Z a-z 0-9 _ -, made by the SDK once per event and kept across retries',
  })
  events: AdapterAuditDto[];
}

export class AuditAcceptedDto {
  @ApiProperty({ example: true }) accepted: boolean;
  @ApiProperty({ description: 'False when the eventId was seen before (nothing new was recorded)' }) recorded: boolean;
}

export class AuditBatchAcceptedDto {
  @ApiProperty({ description: 'Events newly recorded' }) accepted: number;
  @ApiProperty({ description: 'Events whose eventId was recorded before (a retried batch): not recorded again' }) duplicates: number;
}
