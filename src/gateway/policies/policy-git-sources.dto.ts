import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';

export class PolicyGitSourceDto {
  @ApiProperty({
    example: 'https://git.example.com/acme/policies.git',
    description: 'The repository: an `https://`, `http://`, `ssh://` or `git://` URL, or (under POLICIES_GIT_LOCAL_ROOT) a local path or `file://` URL. Credentials in it are masked wherever it is shown',
  })
  @IsString()
  @MaxLength(2048)
  url: string;

  @ApiPropertyOptional({ default: 'main', description: 'The branch followed' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  branch?: string;

  @ApiPropertyOptional({ default: '.', description: 'The folder of the repository holding the policy and test files (`.`: all of it)' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  path?: string;

  @ApiPropertyOptional({ default: '60s', example: '30s', description: 'How often the branch is fetched (`1s` to `1d`); a failed fetch is retried at the next poll' })
  @IsOptional()
  @IsString()
  @MaxLength(20)
  pollInterval?: string;

  @ApiPropertyOptional({ description: 'An SSH allowed-signers file’s text (`ssh-keygen -Y verify`’s format): a commit not signed by one of them is refused' })
  @IsOptional()
  @IsString()
  @MaxLength(65_536)
  allowedSigners?: string;
}

export class GitSourceErrorView {
  @ApiProperty({ nullable: true, type: String, description: 'The commit refused; null when the fetch failed' }) commit: string | null;
  @ApiProperty() message: string;
  @ApiProperty() at: string;
}

export class PolicyGitSourceView {
  @ApiProperty({ description: 'Without credentials' }) url: string;
  @ApiProperty() branch: string;
  @ApiProperty() path: string;
  @ApiProperty({ description: 'Milliseconds between fetches' }) pollMs: number;
  @ApiProperty({ description: 'True when commits must be signed by an allowed signer' }) signed: boolean;
  @ApiProperty() updatedBy: string;
  @ApiProperty() updatedAt: string;
  @ApiProperty({ nullable: true, type: String, description: 'The commit whose policies are in force (as this instance last saw); null before the first good one' }) commit: string | null;
  @ApiProperty({ nullable: true, type: String }) appliedAt: string | null;
  @ApiProperty({ nullable: true, type: String }) checkedAt: string | null;
  @ApiProperty({ nullable: true, type: GitSourceErrorView, description: 'Why the latest commit or fetch was refused: the last good commit stays in force' }) error: GitSourceErrorView | null;
}
