import { ApiProperty } from '@nestjs/swagger';
import { PLAN_IDS } from '../../core/config/plans';

export class PlanLimitsView {
  @ApiProperty({ description: '-1 = unlimited' }) agents: number;
  @ApiProperty() policyChecksPerMonth: number;
  @ApiProperty() policies: number;
  @ApiProperty() auditRetentionDays: number;
  @ApiProperty() teamMembers: number;
}

export class UsageView {
  @ApiProperty({ description: 'Active (not revoked) agents' }) agents: number;
  @ApiProperty() policies: number;
  @ApiProperty({ description: 'Policy checks counted this calendar month (UTC)' }) policyChecksThisMonth: number;
  @ApiProperty({ example: '2026-11' }) period: string;
}

export class OrganizationView {
  @ApiProperty({ example: 'org_default' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ enum: PLAN_IDS }) plan: string;
  @ApiProperty({ type: PlanLimitsView }) limits: PlanLimitsView;
  @ApiProperty({ type: UsageView }) usage: UsageView;
  @ApiProperty({ nullable: true, type: String }) billingEmail: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'Payment-provider customer id' }) customerId: string | null;
}
