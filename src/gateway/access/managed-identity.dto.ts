import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsNotEmpty, IsOptional, IsString, MaxLength } from 'class-validator';

export class RegisterOidcClientDto {
  @ApiProperty({ description: 'Client id of the managed identity as its tokens carry it (`azp`, `appid` or `client_id`, else `sub`)', maxLength: 200 })
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  clientId: string;

  @ApiProperty({
    description: 'A current token of this client from the identity provider (OIDC_ISSUER, audience OIDC_AUDIENCE): proves the organization controls the managed identity. Checked, never stored',
    maxLength: 16_384,
  })
  @IsString()
  @IsNotEmpty()
  @MaxLength(16_384)
  proofToken: string;

  @ApiPropertyOptional({ description: 'An agent of the organization this client acts as at `/mcp/<name>`, with a token whose audience is that MCP server’s URL (docs/mcp.md)', maxLength: 64 })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  agentId?: string;

  @ApiPropertyOptional({ maxLength: 500, example: 'billing worker (Azure managed identity)' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;
}

export class OidcClientView {
  @ApiProperty() clientId: string;
  @ApiProperty({ nullable: true, type: String, description: 'The agent it acts as at /mcp/<name>' }) agentId: string | null;
  @ApiProperty() description: string;
  @ApiProperty({ example: '2026-11-21T10:15:30.123Z' }) createdAt: string;
}

export class OidcClientListView {
  @ApiProperty({ type: [OidcClientView] }) clients: OidcClientView[];
}
