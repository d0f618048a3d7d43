import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsDefined,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { IsTimestamp } from '../../core/common/is-timestamp';
import { MAX_SESSION_ID_LENGTH } from '../../core/decision/session-id';

const SESSION_ID = /^[A-Za-z0-9._:-]*$/;
const SESSION_ID_MESSAGE = 'must be characters of A-Z a-z 0-9 . _ : -';

export class SimulationAgentDto {
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(128) id?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(200) name?: string;
  @ApiPropertyOptional({ example: 'verified', description: 'Any tier name or alias' }) @IsOptional() @IsString() @MaxLength(32) trust_tier?: string;
  @ApiPropertyOptional({ type: [String] }) @IsOptional() @IsArray() @ArrayMaxSize(50) @IsString({ each: true }) tags?: string[];
}

export class SimulationDelegationDto {
  @ApiPropertyOptional({ minimum: 1 }) @IsOptional() @IsInt() @Min(1) @Max(64) depth?: number;
  @ApiPropertyOptional({ type: [String] }) @IsOptional() @IsArray() @ArrayMaxSize(64) @IsString({ each: true }) chain?: string[];
}

/** A session's facts as a decision reads them (docs/policies.md "Seen"), as policy test files give them. */
export class SimulationSessionDto {
  @ApiPropertyOptional({ maxLength: MAX_SESSION_ID_LENGTH }) @IsOptional() @IsString() @MaxLength(MAX_SESSION_ID_LENGTH) @Matches(SESSION_ID, { message: `session.id ${SESSION_ID_MESSAGE}` }) id?: string;
  @ApiPropertyOptional({ type: [String] }) @IsOptional() @IsArray() @ArrayMaxSize(64) @IsString({ each: true }) @MaxLength(64, { each: true }) labels?: string[];
  @ApiPropertyOptional({ type: [String] }) @IsOptional() @IsArray() @ArrayMaxSize(64) @IsString({ each: true }) @MaxLength(64, { each: true }) agent_labels?: string[];
  @ApiPropertyOptional({ type: Object, description: 'Actions let through earlier in the session, and how often each (at most 256)', example: { 'read:customers/1': 1 } })
  @IsOptional()
  @IsObject()
  calls?: Record<string, unknown>;
}

/** A decision input (docs/policies.md "What a condition can read"); missing parts default to empty values. */
export class SimulationInputDto {
  @ApiPropertyOptional({ description: 'Use this agent’s current record (overrides `agent`)' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  agentId?: string;

  @ApiPropertyOptional({ type: SimulationAgentDto })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => SimulationAgentDto)
  agent?: SimulationAgentDto;

  @ApiProperty({ example: 'write:orders' }) @IsString() @MaxLength(2048) action: string;
  @ApiPropertyOptional({ example: 'orders' }) @IsOptional() @IsString() @MaxLength(2048) resource?: string;
  @ApiPropertyOptional({ example: 'http' }) @IsOptional() @IsString() @MaxLength(256) plugin?: string;
  @ApiPropertyOptional({ example: 'write' }) @IsOptional() @IsString() @MaxLength(256) function?: string;
  @ApiPropertyOptional({ type: Object }) @IsOptional() @IsObject() args?: Record<string, unknown>;
  @ApiPropertyOptional({ type: Object }) @IsOptional() @IsObject() context?: Record<string, unknown>;

  @ApiPropertyOptional({ type: SimulationDelegationDto })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => SimulationDelegationDto)
  delegation?: SimulationDelegationDto;

  @ApiPropertyOptional({ type: SimulationSessionDto, description: 'The session facts to decide on (labels, agent labels, calls); not with `sessionId`' })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => SimulationSessionDto)
  session?: SimulationSessionDto;

  @ApiPropertyOptional({ description: 'With `agentId`: decide on the facts this session of the agent holds now (empty: its own scope); nothing is remembered', maxLength: MAX_SESSION_ID_LENGTH })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_SESSION_ID_LENGTH)
  @Matches(SESSION_ID, { message: `sessionId ${SESSION_ID_MESSAGE}` })
  sessionId?: string;
}

export class SimulateRequestDto {
  // @IsObject on nested inputs: @ValidateNested checks a list element by element (an empty one
  // not at all), so `[]` passed as an input, an agent or a delegation and was simulated as `{}`.
  @ApiProperty({ type: SimulationInputDto })
  @IsDefined()
  @IsObject()
  @ValidateNested()
  @Type(() => SimulationInputDto)
  input: SimulationInputDto;

  @ApiPropertyOptional({
    description: 'Proposed policies: YAML/JSON text of a policy or a policies file, a list of policies, or one policy object. Omit to simulate the current policies.',
  })
  @IsOptional()
  policies?: unknown;

  @ApiPropertyOptional({ description: 'true: the proposed policies replace all current ones; false (default): they replace same-named ones and add the rest' })
  @IsOptional()
  @IsBoolean()
  replace?: boolean;
}

export class BacktestRequestDto {
  @ApiProperty({ description: 'Proposed policies, in any form `simulate` accepts' })
  @IsDefined()
  policies: unknown;

  @ApiPropertyOptional({ description: 'See simulate' }) @IsOptional() @IsBoolean() replace?: boolean;

  @ApiProperty({ description: 'Replay decisions recorded from this timestamp (ISO 8601)' })
  @IsTimestamp()
  from: string;

  @ApiPropertyOptional({ description: 'Until this timestamp (ISO 8601, exclusive); default now' })
  @IsOptional()
  @IsTimestamp()
  to?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: 100000, default: 10000, description: 'Most decisions replayed (oldest first)' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100000)
  limit?: number;
}

export class RateLimitView {
  @ApiProperty({ example: '10/1m per_agent' }) limit: string;
  @ApiProperty() retryAfterSeconds: number;
}

export class FiredAlertView {
  @ApiProperty() policy: string;
  @ApiProperty() rule: string;
  @ApiProperty() reason: string;
}

export class DecisionView {
  @ApiProperty({ enum: ['allow', 'deny'] }) decision: string;
  @ApiProperty() policy: string;
  @ApiProperty({ nullable: true, type: String }) rule: string | null;
  @ApiProperty() reason: string;
  @ApiPropertyOptional({ type: RateLimitView }) rateLimit?: RateLimitView;
  @ApiPropertyOptional({ type: [FiredAlertView], description: 'The `alert` rules that fired (they raise alerts and never change the decision)' }) alerts?: FiredAlertView[];
}

/** One rule as the simulation tried it (src/core/policy-engine/types.ts RuleTrace). */
export class RuleTraceView {
  @ApiProperty() rule: string;
  @ApiProperty({ enum: ['allow', 'deny', 'alert', 'require_approval', 'label'] }) action: string;
  @ApiProperty({ oneOf: [{ type: 'boolean' }, { type: 'string', enum: ['not-reached'] }], description: 'The value of its condition; `not-reached` when a deny had decided before it' })
  result: boolean | 'not-reached';
  @ApiPropertyOptional({ type: RateLimitView, description: 'The rate limit it consulted (a dry run: nothing counted)' }) rateLimit?: RateLimitView;
}

/** One policy as the simulation tried it, with each of its rules. */
export class PolicyTraceView {
  @ApiProperty() policy: string;
  @ApiProperty({ description: 'Whether its `match` accepted the request' }) applicable: boolean;
  @ApiProperty({ type: [RuleTraceView] }) rules: RuleTraceView[];
}

export class SimulationView extends DecisionView {
  @ApiProperty({ description: 'False in MODE=audit: a deny would only be recorded' }) enforced: boolean;
  @ApiProperty({ nullable: true, type: Number, description: 'Policy version simulated; null for proposed policies' }) policyVersion: number | null;
  @ApiProperty({ description: 'Every policy and rule tried, in order', type: [PolicyTraceView] }) trace: PolicyTraceView[];
}

export class BacktestFlipView {
  @ApiProperty() id: string;
  @ApiProperty() timestamp: string;
  @ApiProperty({ nullable: true, type: String }) agentId: string | null;
  @ApiProperty() action: string;
  @ApiProperty({ type: DecisionView }) before: DecisionView;
  @ApiProperty({ type: DecisionView }) after: DecisionView;
}

export class BacktestPolicyCount {
  @ApiProperty() policy: string;
  @ApiProperty() allowToDeny: number;
  @ApiProperty() denyToAllow: number;
}

export class BacktestReportView {
  @ApiProperty() from: string;
  @ApiProperty() to: string;
  @ApiProperty({ description: 'Recorded decisions read' }) examined: number;
  @ApiProperty({ description: 'Decisions without a recorded input (not replayable)' }) skipped: number;
  @ApiProperty() unchanged: number;
  @ApiProperty() allowToDeny: number;
  @ApiProperty() denyToAllow: number;
  @ApiProperty({ type: [BacktestPolicyCount], description: 'Flips per policy: the new denying policy, or the policy that denied before' }) byPolicy: BacktestPolicyCount[];
  @ApiProperty({ type: [BacktestFlipView], description: 'The flipped decisions, oldest first (at most 1000)' }) flips: BacktestFlipView[];
  @ApiProperty({ description: 'True when `limit` stopped the replay before `to`' }) truncated: boolean;
}
