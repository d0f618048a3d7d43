import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ToWholeNumber } from '../../core/common/validation';
import { IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';

export class PolicyMatchView {
  @ApiPropertyOptional({ example: 'http' }) plugin?: string;
  @ApiPropertyOptional({ example: 'write' }) function?: string;
  @ApiPropertyOptional({ example: 'write:*' }) action?: string;
}

export class PolicyRuleView {
  @ApiPropertyOptional() name?: string;
  @ApiProperty({ example: 'args.path starts_with "/etc"' }) condition: string;
  @ApiProperty({ enum: ['allow', 'deny', 'alert'], description: '`alert`: raise an alert and go on (never decides)' }) action: string;
  @ApiProperty() reason: string;
}

export class PolicyView {
  @ApiProperty({ example: 'block-sensitive-files' }) name: string;
  @ApiPropertyOptional() description?: string;
  @ApiPropertyOptional({ type: PolicyMatchView }) match?: PolicyMatchView;
  @ApiPropertyOptional({ enum: ['allow', 'deny'], description: 'Outcome when no allow rule of this policy fires' }) default?: string;
  @ApiProperty({ enum: ['enforce', 'shadow'], description: '`shadow`: evaluated and recorded on every decision, never enforced' }) mode: string;
  @ApiProperty({ type: [PolicyRuleView] }) rules: PolicyRuleView[];
  @ApiProperty({ enum: ['api', 'file', 'git'], description: '`git`: kept in the POLICIES_GIT_URL repository; the API refuses to change it' }) origin: string;
  @ApiProperty({ description: 'Organization policy version of this policy’s last change' }) version: number;
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
}

export class PolicyDetailView extends PolicyView {
  @ApiProperty({ description: 'The policy as submitted (YAML or JSON)' }) source: string;
}

export class PolicyListView {
  @ApiProperty({ description: 'Current organization policy version' }) version: number;
  @ApiProperty({ type: [PolicyView] }) policies: PolicyView[];
}

export class PolicyErrorView {
  @ApiProperty() file: string;
  @ApiPropertyOptional() policy?: string;
  @ApiPropertyOptional() rule?: string;
  @ApiProperty() line: number;
  @ApiProperty() column: number;
  @ApiProperty() message: string;
}

export class InvalidPolicyBody {
  @ApiProperty({ example: 'invalid_policy' }) error: string;
  @ApiProperty() message: string;
  @ApiProperty({ type: [PolicyErrorView], description: 'The first 100 errors, in source order' }) errors: PolicyErrorView[];
  @ApiProperty({ description: 'How many errors there are in all' }) errorCount: number;
}

export class ValidationResultView {
  @ApiProperty() valid: boolean;
  @ApiProperty({ type: [String], description: 'Names of the policies found (when valid)' }) policies: string[];
  @ApiProperty({ type: [PolicyErrorView], description: 'The first 100 errors, in source order' }) errors: PolicyErrorView[];
  @ApiProperty({ description: 'How many errors there are in all' }) errorCount: number;
}

export class PolicyVersionView {
  @ApiProperty() version: number;
  @ApiProperty({ description: 'The policy changed; for `agent_*` kinds the agent id, for `apikey_revoked` the API key id' }) policy: string;
  @ApiProperty({
    enum: ['created', 'updated', 'deleted', 'agent_changed', 'agent_revoked', 'apikey_revoked'],
    description: 'Besides policy changes, the changes decisions depend on take a version too (an agent re-tiered, re-tagged or revoked, an API key revoked)',
  })
  kind: string;
  @ApiProperty({ description: 'Admin token id, `cli` or `file`' }) actor: string;
  @ApiProperty() createdAt: string;
  @ApiProperty({ nullable: true, type: String, description: 'Source after the change; null for deletions and for agent and API key changes' }) source: string | null;
}

export class PolicyVersionListView {
  @ApiProperty() version: number;
  @ApiProperty({ type: [PolicyVersionView] }) versions: PolicyVersionView[];
}

export class PolicyVersionsQueryDto {
  @ApiPropertyOptional({ minimum: 1, maximum: 1000, default: 100 })
  @IsOptional()
  @ToWholeNumber()
  @IsInt()
  @Min(1)
  @Max(1000)
  limit?: number;
}

export class PolicyTestFailureView {
  @ApiProperty({ description: 'The stored test file', example: 'refunds' }) suite: string;
  @ApiProperty({ example: 'large refunds need a privileged agent' }) test: string;
  @ApiProperty({ description: 'Where the test starts in its file' }) line: number;
  @ApiProperty() column: number;
  @ApiProperty({ example: 'expected deny; got allow by policy refunds, rule (none): allowed' }) failure: string;
}

export class PolicyTestRunView {
  @ApiProperty({ description: 'Tests run, over every stored test file' }) tests: number;
  @ApiProperty() passed: number;
  @ApiProperty({ type: [PolicyTestFailureView] }) failures: PolicyTestFailureView[];
}

export class PolicyTestFileView {
  @ApiProperty({ example: 'refunds' }) name: string;
  @ApiProperty({ description: 'Tests in the file' }) tests: number;
  @ApiProperty({ description: 'The test file as submitted (YAML or JSON)' }) source: string;
  @ApiProperty() updatedAt: string;
}

export class PolicyTestFileListView {
  @ApiProperty({ type: [PolicyTestFileView] }) files: PolicyTestFileView[];
}

export class PolicyTestsFailedBody {
  @ApiProperty({ example: 'policy_tests_failed' }) error: string;
  @ApiProperty() message: string;
  @ApiProperty({ type: [PolicyTestFailureView] }) failures: PolicyTestFailureView[];
}

export class ForceQueryDto {
  @ApiPropertyOptional({ description: 'Put the change in force although stored policy tests fail (audited with the failures)', enum: ['true', 'false'] })
  @IsOptional()
  @IsIn(['true', 'false'])
  force?: 'true' | 'false';
}
