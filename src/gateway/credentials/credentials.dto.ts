import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';

export const PLACEMENTS = ['header', 'bearer', 'query'] as const;
export type PlacementType = (typeof PLACEMENTS)[number];

/** Longest credential value: an API key or token, not a document. */
export const MAX_VALUE_CHARS = 8192;

export class CreateCredentialDto {
  @ApiPropertyOptional({ example: '/proxy/payments', description: 'The proxy route: `/proxy` or `/proxy/<prefix>`; requests at or under it get the credential. Exactly one of route and mcpServer' })
  @IsOptional()
  @IsString()
  @MaxLength(1024)
  route?: string;

  @ApiPropertyOptional({ example: 'github', description: 'An MCP server of MCP_SERVERS; its forwarded calls get the credential. Exactly one of route and mcpServer' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  mcpServer?: string;

  @ApiProperty({ enum: PLACEMENTS, description: '`header` (a header named `name`), `bearer` (Authorization: Bearer) or `query` (a query parameter named `name`)' })
  @IsIn(PLACEMENTS, { message: `type must be one of: ${PLACEMENTS.join(', ')}` })
  type: PlacementType;

  @ApiPropertyOptional({ example: 'X-Api-Key', description: 'The header or query parameter name (header and query only)' })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(100)
  name?: string;

  @ApiProperty({ description: 'The secret; stored encrypted, never shown again', writeOnly: true, maxLength: MAX_VALUE_CHARS })
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_VALUE_CHARS)
  value: string;

  @ApiPropertyOptional({ default: false, description: 'Also given to the organization’s sidecars, sealed to each sidecar’s own key in its bundle' })
  @IsOptional()
  @IsBoolean()
  edge?: boolean;
}

export class RotateCredentialDto {
  @ApiProperty({ description: 'The new secret; in force on every instance before the answer', writeOnly: true, maxLength: MAX_VALUE_CHARS })
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_VALUE_CHARS)
  value: string;
}

/** A credential as the API shows it: everything but its value. */
export class CredentialView {
  @ApiProperty({ example: 'cred_3f9a0c1b2d4e5f6a7b8c9d0e' }) id: string;
  @ApiProperty({ nullable: true, type: String, example: '/proxy/payments' }) route: string | null;
  @ApiProperty({ nullable: true, type: String, example: null }) mcpServer: string | null;
  @ApiProperty({ enum: PLACEMENTS }) type: PlacementType;
  @ApiProperty({ nullable: true, type: String, example: 'X-Api-Key' }) name: string | null;
  @ApiProperty() edge: boolean;
  @ApiProperty({ description: '1 at creation, one more at each rotation', example: 1 }) version: number;
  @ApiProperty({ example: '2026-12-01T10:00:00.000Z' }) createdAt: string;
  @ApiProperty({ nullable: true, type: String, example: null }) rotatedAt: string | null;
  @ApiProperty({ nullable: true, type: String, example: null }) revokedAt: string | null;
}

export class CredentialListView {
  @ApiProperty({ type: [CredentialView] }) credentials: CredentialView[];
}

/** RFC 9110 token characters: what a header name may be made of. */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Visible ASCII, spaces and tabs: a header value that cannot split the request. */
export const HEADER_VALUE = /^[\x20-\x7e\t]+$/;
export const QUERY_NAME = /^[^&=#?\s]+$/;
