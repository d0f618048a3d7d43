import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsNotEmpty, IsObject, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { IsDisplayName, IsOmittable } from '../../core/common/validation';

/** Tiers the admin API accepts (docs/policies.md "Trust tiers": the admin API's names). */
export const ADMIN_TIERS = ['unverified', 'verified', 'trusted', 'privileged'] as const;
const TIER_MESSAGE = `trustTier must be one of: ${ADMIN_TIERS.join(', ')}`;
const TAG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}$/;
const TAG_MESSAGE = 'each tag must be 1-64 characters of letters, digits, and . _ : / - (starting with a letter or digit)';

export class CreateAgentDto {
  @ApiProperty({ example: 'invoice-bot', maxLength: 200 })
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  @IsDisplayName()
  name: string;

  @ApiPropertyOptional({ enum: ADMIN_TIERS, default: 'unverified' })
  @IsOptional()
  @IsIn(ADMIN_TIERS, { message: TIER_MESSAGE })
  trustTier?: string;

  @ApiPropertyOptional({ type: [String], example: ['finance', 'pii'], maxItems: 50 })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(50)
  @Matches(TAG_PATTERN, { each: true, message: TAG_MESSAGE })
  tags?: string[];

  @ApiPropertyOptional({ type: Object, example: { team: 'billing' } })
  @IsOptional()
  @IsObject()
  metadata?: Record<string, unknown>;
}

export class UpdateAgentDto {
  @ApiPropertyOptional({ maxLength: 200 })
  @IsOmittable()
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  @IsDisplayName()
  name?: string;

  @ApiPropertyOptional({ enum: ADMIN_TIERS })
  @IsOmittable()
  @IsIn(ADMIN_TIERS, { message: TIER_MESSAGE })
  trustTier?: string;

  @ApiPropertyOptional({ type: [String], maxItems: 50 })
  @IsOmittable()
  @IsArray()
  @ArrayMaxSize(50)
  @Matches(TAG_PATTERN, { each: true, message: TAG_MESSAGE })
  tags?: string[];

  @ApiPropertyOptional({ type: Object, description: 'Replaces the whole metadata object' })
  @IsOmittable()
  @IsObject()
  metadata?: Record<string, unknown>;
}

export class ListAgentsQueryDto {
  @ApiPropertyOptional({ description: 'Include revoked agents', default: false })
  @IsOptional()
  @Transform(({ value }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsBoolean({ message: 'includeRevoked must be true or false' })
  includeRevoked?: boolean;
}

export class AgentView {
  @ApiProperty({ example: 'agent_9f86d081884c7d659a2feaa0' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ enum: ADMIN_TIERS }) trustTier: string;
  @ApiProperty({ type: [String] }) tags: string[];
  @ApiProperty({ type: Object }) metadata: Record<string, unknown>;
  @ApiProperty({ enum: ['active', 'revoked'] }) status: 'active' | 'revoked';
  @ApiProperty({ example: '2026-11-21T10:15:30.123Z' }) createdAt: string;
  @ApiProperty({ example: '2026-11-21T10:15:30.123Z' }) updatedAt: string;
  @ApiProperty({ nullable: true, type: String }) revokedAt: string | null;
}

export class CreatedAgentView extends AgentView {
  @ApiProperty({ description: 'Agent token (JWT). Shown only here: store it now.' }) token: string;
  @ApiProperty({ example: '2026-11-22T10:15:30.000Z' }) tokenExpiresAt: string;
}

export class AgentListView {
  @ApiProperty({ type: [AgentView] }) agents: AgentView[];
}

export class IssuedTokenView {
  @ApiProperty() agentId: string;
  @ApiProperty() token: string;
  @ApiProperty() expiresAt: string;
}
