import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { IsDisplayName } from '../../core/common/validation';

export class CreateSidecarTokenDto {
  @ApiPropertyOptional({ example: 'edge-eu-1', description: 'What the token is for (shown in lists)', maxLength: 200 })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  @IsDisplayName()
  name?: string;
}

export class CreatedSidecarTokenView {
  @ApiProperty({ example: 'sctk_3f9a0c1b2d4e5f6a7b8c9d0e' }) id: string;
  @ApiProperty({ description: 'The token, shown only once: give it to the sidecar as ADMIN_TOKEN', example: 'sct_Jm3…' }) token: string;
  @ApiProperty({ example: 'edge-eu-1' }) name: string;
  @ApiProperty({ example: '2026-11-24T10:00:00.000Z' }) createdAt: string;
}

export class SidecarTokenView {
  @ApiProperty({ example: 'sctk_3f9a0c1b2d4e5f6a7b8c9d0e' }) id: string;
  @ApiProperty({ example: 'edge-eu-1' }) name: string;
  @ApiProperty({ description: 'The token’s first characters', example: 'sct_Jm3q' }) prefix: string;
  @ApiProperty({ example: '2026-11-24T10:00:00.000Z' }) createdAt: string;
  @ApiProperty({ nullable: true, type: String, example: null }) revokedAt: string | null;
}

export class SidecarTokenListView {
  @ApiProperty({ type: [SidecarTokenView] }) sidecarTokens: SidecarTokenView[];
}
