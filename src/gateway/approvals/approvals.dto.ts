import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { IsOmittable, ToWholeNumber } from '../../core/common/validation';

export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'used'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

export class ApprovalView {
  @ApiProperty({ example: 'appr_3f9a0c1b2d4e5f6a7b8c9d0e' }) id: string;
  @ApiProperty({ enum: APPROVAL_STATUSES, description: '`expired`: still pending past its expiry; `used`: approved, and the request it approved went through' })
  status: ApprovalStatus;
  @ApiProperty() agentId: string;
  @ApiProperty() agentName: string;
  @ApiProperty({ enum: ['proxy', 'pdp', 'check', 'sidecar', 'mcp'] }) source: string;
  @ApiProperty({ example: 'write:refunds/42', description: 'The action decided on: the declared one (X-Service-Action, a check’s `action`) where the caller declared one' })
  action: string;
  @ApiProperty({ nullable: true, type: String, description: 'The action derived from the request itself (`write:admin/users`, `Payments.Refund`) when the caller declared another one' })
  derivedAction: string | null;
  @ApiProperty({ nullable: true, type: String }) method: string | null;
  @ApiProperty({ nullable: true, type: String }) path: string | null;
  @ApiProperty({ description: 'The policy whose require_approval rule held the request' }) policy: string;
  @ApiProperty({ nullable: true, type: String }) rule: string | null;
  @ApiProperty() reason: string;
  @ApiProperty({ type: [String], description: 'Tags of the approvers the rule names (empty: any admin)' }) approvers: string[];
  @ApiProperty({ nullable: true, type: String }) traceId: string | null;
  @ApiProperty({ example: '2026-11-28T10:15:30.123Z' }) createdAt: string;
  @ApiProperty({ example: '2026-11-28T10:20:30.123Z' }) expiresAt: string;
  @ApiProperty({ nullable: true, type: String, description: 'The admin token id, `cli`, or `approval link`' }) decidedBy: string | null;
  @ApiProperty({ nullable: true, type: String }) decidedAt: string | null;
  @ApiProperty({ nullable: true, type: String }) comment: string | null;
  @ApiProperty({ nullable: true, type: String }) usedAt: string | null;
}

export class ApprovalListView {
  @ApiProperty({ type: [ApprovalView], description: 'Newest first (by creation, then id)' }) approvals: ApprovalView[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as `cursor` for the next page; null on the last page' })
  nextCursor: string | null;
}

/** Most approvals one page holds. */
export const APPROVAL_PAGE_MAX = 500;

export class ApprovalQueryDto {
  @ApiPropertyOptional({ enum: APPROVAL_STATUSES })
  @IsOptional()
  @IsIn(APPROVAL_STATUSES, { message: `status must be one of: ${APPROVAL_STATUSES.join(', ')}` })
  status?: ApprovalStatus;

  @ApiPropertyOptional({ description: 'Only the approvals of this agent' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  agentId?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: APPROVAL_PAGE_MAX, default: 100 })
  @IsOptional()
  @ToWholeNumber()
  @IsInt({ message: `limit must be a whole number from 1 to ${APPROVAL_PAGE_MAX}` })
  @Min(1, { message: `limit must be a whole number from 1 to ${APPROVAL_PAGE_MAX}` })
  @Max(APPROVAL_PAGE_MAX, { message: `limit must be a whole number from 1 to ${APPROVAL_PAGE_MAX}` })
  limit?: number;

  @ApiPropertyOptional({ description: 'The `nextCursor` of the previous page (opaque)' })
  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9_-]{1,200}$/, { message: 'cursor must be a nextCursor value returned by this endpoint' })
  cursor?: string;
}

export class ApprovalDecisionDto {
  @ApiPropertyOptional({ maxLength: 1000, example: 'Customer confirmed by phone' })
  @IsOmittable()
  @IsString()
  @MaxLength(1000)
  comment?: string;
}

export class ApprovalStatusDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: APPROVAL_STATUSES }) status: ApprovalStatus;
  @ApiProperty() expiresAt: string;
}
