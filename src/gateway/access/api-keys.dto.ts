import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { IsDisplayName } from '../../core/common/validation';

export class CreateApiKeyDto {
  @ApiPropertyOptional({ example: 'billing-agent adapter', description: 'What the key is for (shown in lists)', maxLength: 200 })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  @IsDisplayName()
  name?: string;
}

export class CreatedApiKeyView {
  @ApiProperty({ example: 'key_3f9a0c1b2d4e5f6a7b8c9d0e' }) id: string;
  @ApiProperty({ description: 'The key, shown only once: adapters send it as X-Api-Key', example: 'agk_Jm3…' }) key: string;
  @ApiProperty() name: string;
  @ApiProperty({ example: '2026-11-24T10:00:00.000Z' }) createdAt: string;
}

export class ApiKeyView {
  @ApiProperty({ example: 'key_3f9a0c1b2d4e5f6a7b8c9d0e' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ description: 'The key’s first characters', example: 'agk_Jm3q' }) prefix: string;
  @ApiProperty({ example: '2026-11-24T10:00:00.000Z' }) createdAt: string;
  @ApiProperty({ nullable: true, type: String, example: null }) revokedAt: string | null;
}

export class ApiKeyListView {
  @ApiProperty({ type: [ApiKeyView] }) apiKeys: ApiKeyView[];
}
