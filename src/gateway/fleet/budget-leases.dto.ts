import { ApiProperty } from '@nestjs/swagger';
import { IsNumber, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { MAX_BUDGET_LIMIT } from '../../core/policy-engine/checker';
import { MAX_CALL_COST } from '../../core/policy-engine/policy-validator';

/** Longest budget key a lease names: its site's prefix (policy names are short) and a partition (an agent and session id). */
export const MAX_BUDGET_KEY_LENGTH = 2048;
/** A budget key: `bg:` then URI-encoded parts (docs/sidecar.md "Budgets"). */
const BUDGET_KEY = /^bg:[A-Za-z0-9%._~!*'()-]*(:[A-Za-z0-9%._~!*'()-]*){5,}$/;

export class BudgetLeaseRequestDto {
  @ApiProperty({ description: 'The budget total the lease is a slice of, as the sidecar computes it from the bundle: `bg:<org>:<policy>:<rule>:<call>:<scope>:<partition>`', example: 'bg:org_default:model-spend:0:0:per_agent:agent_1' })
  @IsString()
  @MaxLength(MAX_BUDGET_KEY_LENGTH)
  @Matches(BUDGET_KEY, { message: 'key must be a budget key (bg:<org>:<policy>:<rule>:<call>:<scope>:<partition>)' })
  key: string;

  @ApiProperty({ description: 'The least the lease must hold: the cost of the call waiting for it', minimum: 0, maximum: MAX_CALL_COST, example: 5 })
  @IsNumber({ allowNaN: false, allowInfinity: false }, { message: 'least must be a number' })
  @Min(0, { message: 'least must not be negative' })
  @Max(MAX_CALL_COST, { message: `least must be at most ${MAX_CALL_COST}` })
  least: number;
}

export class BudgetLeaseView {
  @ApiProperty({ description: 'The lease; only the credential that took it returns it', example: 'sct_1a2b/lq3x1.4' })
  leaseId: string;

  @ApiProperty({ description: 'The budget total it is a slice of' })
  key: string;

  @ApiProperty({ description: 'How much of the budget the lease holds: the sidecar admits calls up to this much, no more', example: 10 })
  granted: number;

  @ApiProperty({ description: 'How long the lease may be spent, ms from when it was asked for; unspent, it is returned', example: 60000 })
  expiresInMs: number;
}

export class BudgetLeaseReturnDto {
  @ApiProperty({ description: 'The budget total of the lease' })
  @IsString()
  @MaxLength(MAX_BUDGET_KEY_LENGTH)
  @Matches(BUDGET_KEY, { message: 'key must be a budget key (bg:<org>:<policy>:<rule>:<call>:<scope>:<partition>)' })
  key: string;

  @ApiProperty({ description: 'The lease, as it was granted' })
  @IsString()
  @MaxLength(512)
  leaseId: string;

  @ApiProperty({ description: 'What the sidecar spent of it; the rest goes back to the budget', minimum: 0, maximum: MAX_BUDGET_LIMIT })
  @IsNumber({ allowNaN: false, allowInfinity: false }, { message: 'spent must be a number' })
  @Min(0, { message: 'spent must not be negative' })
  @Max(MAX_BUDGET_LIMIT, { message: `spent must be at most ${MAX_BUDGET_LIMIT}` })
  spent: number;
}

export class BudgetLeaseReturnView {
  @ApiProperty({ description: 'False when the lease was unknown or past its window (its whole grant then counts as spent)' })
  returned: boolean;
}
