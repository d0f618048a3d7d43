import { ApiProperty } from '@nestjs/swagger';

/** The error shape of the whole service. */
export class ErrorBody {
  @ApiProperty({ example: 'invalid_request', description: 'Machine-readable error code' })
  error: string;

  @ApiProperty({ example: 'trustTier must be one of: unverified, verified, trusted, privileged' })
  message: string;
}

export class PlanLimitErrorBody extends ErrorBody {
  @ApiProperty({ example: 2 }) limit: number;
  @ApiProperty({ example: 'free' }) plan: string;
}
