import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsNotEmpty, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { IsOmittable } from '../../core/common/validation';
import { MAX_SCOPE_GLOB_LENGTH, MAX_SCOPE_GLOBS } from '../../core/decision/delegation-scope';

export const IDENTITY_TIERS = ['untrusted', 'verified', 'trusted', 'privileged'] as const;

export class IdentityView {
  @ApiProperty({ example: 'agent_9f86d081884c7d659a2feaa0' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ enum: IDENTITY_TIERS, description: 'Trust tier in the identity vocabulary (`untrusted` is the admin API’s `unverified`)' }) tier: string;
  @ApiProperty({ type: [String] }) tags: string[];
  @ApiProperty({ description: 'Organization id' }) org: string;
  @ApiProperty({ description: 'The `iss` of the agent’s tokens (PUBLIC_URL)', example: 'https://gateway.example.com' }) issuer: string;
  @ApiProperty({ description: 'The `kid` new tokens are signed with; its public key is in /.well-known/jwks.json' }) keyId: string;
  @ApiProperty({ example: '2026-11-21T10:15:30.123Z' }) createdAt: string;
  @ApiProperty() revoked: boolean;
  @ApiProperty({ nullable: true, type: String }) revokedAt: string | null;
}

class TierFactor {
  @ApiProperty({ enum: ['unverified', 'verified', 'trusted', 'privileged'] }) value: string;
  @ApiProperty({ example: 500 }) points: number;
}

class AgeFactor {
  @ApiProperty({ description: 'Days since the agent was created (2 decimals)', example: 12.5 }) days: number;
  @ApiProperty({ example: 62 }) points: number;
}

class DenyRatioFactor {
  @ApiProperty({ description: 'Decisions for the agent in the window' }) decisions: number;
  @ApiProperty({ description: 'Of them, denied by policy (rate limits apart)' }) denied: number;
  @ApiProperty({ description: 'denied / decisions (2 decimals)', example: 0.1 }) ratio: number;
  @ApiProperty({ example: -40 }) points: number;
}

class RateLimitFactor {
  @ApiProperty({ description: 'Denials by a tripped rate limit in the window' }) count: number;
  @ApiProperty({ example: -20 }) points: number;
}

class RevokedFactor {
  @ApiProperty({ description: 'A revoked agent scores 0' }) value: boolean;
}

class TrustFactorsView {
  @ApiProperty({ type: TierFactor }) tier: TierFactor;
  @ApiProperty({ type: AgeFactor }) age: AgeFactor;
  @ApiProperty({ type: DenyRatioFactor }) denyRatio: DenyRatioFactor;
  @ApiProperty({ type: RateLimitFactor }) rateLimitHits: RateLimitFactor;
  @ApiProperty({ type: RevokedFactor }) revoked: RevokedFactor;
}

export class TrustView {
  @ApiProperty() agentId: string;
  @ApiProperty({ minimum: 0, maximum: 1000, description: 'Trust score 0-1000 (docs/trust.md)', example: 640 }) score: number;
  @ApiProperty({ example: '7d', description: 'Window of the audit trail the deny ratio and rate-limit hits are counted over' }) window: string;
  @ApiProperty({ type: TrustFactorsView }) factors: TrustFactorsView;
  @ApiProperty({ example: '2026-11-24T10:15:30.123Z' }) computedAt: string;
}

export class DelegateDto {
  @ApiProperty({ description: 'The delegate: an active agent of the same organization', example: 'agent_9f86d081884c7d659a2feaa0', maxLength: 100 })
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  agentId: string;

  @ApiPropertyOptional({ description: 'Lifetime (`30s`, `15m`, `2h`, `1d`); at most what is left of the delegating token, which is also the default', example: '1h' })
  @IsOmittable()
  @IsString()
  @Matches(/^\d+(\.\d+)?[smhd]$/, { message: 'ttl must be a duration like 30s, 15m, 2h or 1d' })
  ttl?: string;

  @ApiPropertyOptional({
    type: [String],
    description: 'Action globs (`*` wildcard) the new token is limited to; each must lie within the delegating token’s scope. Default: the delegating token’s scope (none: unlimited)',
    example: ['read:reports/*'],
    maxItems: MAX_SCOPE_GLOBS,
  })
  @IsOmittable()
  @IsArray()
  @ArrayMaxSize(MAX_SCOPE_GLOBS)
  @IsString({ each: true })
  @MaxLength(MAX_SCOPE_GLOB_LENGTH, { each: true })
  scope?: string[];
}

class DelegationFactsView {
  @ApiProperty({ description: '1 = direct; 2 or more = delegated', example: 2 }) depth: number;
  @ApiProperty({ type: [String], description: 'Agent ids from the original delegator to the delegate' }) chain: string[];
}

export class DelegationGrantView {
  @ApiProperty({ description: 'The grant (a JWT of type `delegation-grant+jwt`): not a token. Hand it to the delegate, which redeems it at POST /api/v1/identity/token with its own agent token' })
  grant: string;
  @ApiProperty({ example: '2026-11-24T11:15:30.000Z', description: 'The grant, and any token redeemed from it, expire by then' }) expiresAt: string;
  @ApiProperty({ description: 'The delegate: the only agent that can redeem the grant' }) agentId: string;
  @ApiProperty({ description: 'The delegating agent' }) delegatedBy: string;
  @ApiProperty({ type: DelegationFactsView }) delegation: DelegationFactsView;
  @ApiProperty({ type: [String], nullable: true, description: 'Action globs the token is limited to; null: unlimited' }) scope: string[] | null;
}

/** RFC 8693's grant type for token exchange. */
export const TOKEN_EXCHANGE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange';

/** RFC 8693 token exchange, in JSON: the delegate redeems a grant with its own token. */
export class TokenExchangeDto {
  @ApiProperty({ example: TOKEN_EXCHANGE_GRANT_TYPE })
  @IsString()
  grant_type: string;

  @ApiProperty({ description: 'The delegation grant of POST /api/v1/identity/delegate' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(16_384)
  subject_token: string;

  @ApiPropertyOptional({ example: 'urn:agentgov:params:oauth:token-type:delegation-grant' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  subject_token_type?: string;

  @ApiProperty({ description: 'The delegate’s own agent token (not a delegated one): the proof that the delegate itself redeems the grant' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(16_384)
  actor_token: string;

  @ApiPropertyOptional({ example: 'urn:ietf:params:oauth:token-type:jwt' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  actor_token_type?: string;
}

export class TokenExchangeView {
  @ApiProperty({ description: 'The delegated agent token (JWT, `act` chain); shown only here' }) access_token: string;
  @ApiProperty({ example: 'urn:ietf:params:oauth:token-type:jwt' }) issued_token_type: string;
  @ApiProperty({ example: 'Bearer' }) token_type: string;
  @ApiProperty({ description: 'Seconds until it expires' }) expires_in: number;
  @ApiProperty({ example: '2026-11-24T11:15:30.000Z' }) expiresAt: string;
  @ApiProperty({ description: 'The delegate, who acts with the token' }) agentId: string;
  @ApiProperty({ description: 'The lowest trust tier of the chain, which every decision for the token uses (at the time of issue; later tier changes apply too)' }) trustTier: string;
  @ApiProperty({ type: DelegationFactsView }) delegation: DelegationFactsView;
  @ApiProperty({ type: [String], nullable: true, description: 'Action globs the token is limited to; null: unlimited' }) scope: string[] | null;
}

