import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ToWholeNumber } from '../../core/common/validation';
import { IsIn, IsInt, IsNotEmpty, IsNumber, IsObject, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';

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
    enum: ['created', 'updated', 'deleted', 'agent_changed', 'agent_revoked', 'apikey_revoked', 'canary_started', 'canary_ended'],
    description:
      'Besides policy changes, the changes decisions depend on take a version too (an agent re-tiered, re-tagged or revoked, an API key revoked, a canary rollout started, or ended by rollback or abort; a promotion is an `updated`)',
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

export class CanaryStartDto {
  @ApiProperty({ example: 'refunds', description: 'The policy rolled out: an existing policy in force, or a new one' })
  @IsString()
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, { message: 'policy must be a policy name (1-128 characters of letters, digits, . _ -)' })
  policy: string;

  @ApiProperty({ description: 'The new version of the policy, as YAML or JSON text (its `name` must be `policy`)', example: 'name: refunds\nrules:\n  - condition: args.amount > 50\n    action: deny\n    reason: Refunds over 50 are refused\n' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(1_048_576)
  source: string;

  @ApiPropertyOptional({ minimum: 1, maximum: 99, example: 10, description: 'Percent of the agents (by a stable hash of the agent id) that decide on the new version. Give either `share` or `sidecarLabels`' })
  @IsOptional()
  @IsInt({ message: 'share must be a whole percentage from 1 to 99' })
  @Min(1, { message: 'share must be a whole percentage from 1 to 99' })
  @Max(99, { message: 'share must be a whole percentage from 1 to 99' })
  share?: number;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string' },
    example: { canary: 'true' },
    description:
      'A rollout to labelled sidecars: every agent decides on the new version at the sidecars carrying all these labels (SIDECAR_LABELS), and on the version in force everywhere else. Give either `share` or `sidecarLabels`',
  })
  @IsOptional()
  @IsObject({ message: 'sidecarLabels must be an object of label names to values' })
  sidecarLabels?: Record<string, string>;

  @ApiPropertyOptional({ default: '1h', example: '30m', description: 'How long the cohorts are compared before the new version is promoted (`1s` to `30d`)' })
  @IsOptional()
  @IsString()
  @Matches(/^\d+(?:\.\d+)?[smhd]$/, { message: 'window must be a duration such as 30m, 1h or 2d' })
  window?: string;

  @ApiPropertyOptional({ default: 5, minimum: 0, maximum: 100, description: 'Percentage points by which the canary’s deny rate may exceed the rest’s before it is rolled back' })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false }, { message: 'margin must be a number of percentage points from 0 to 100' })
  @Min(0, { message: 'margin must be a number of percentage points from 0 to 100' })
  @Max(100, { message: 'margin must be a number of percentage points from 0 to 100' })
  margin?: number;

  @ApiPropertyOptional({ default: 20, minimum: 1, maximum: 1_000_000, description: 'Decisions each cohort needs before the rates are compared ahead of the window’s end' })
  @IsOptional()
  @IsInt({ message: 'minDecisions must be a whole number from 1 to 1000000' })
  @Min(1, { message: 'minDecisions must be a whole number from 1 to 1000000' })
  @Max(1_000_000, { message: 'minDecisions must be a whole number from 1 to 1000000' })
  minDecisions?: number;
}

export class CohortView {
  @ApiProperty({ description: 'Decisions the rolled-out policy applied to' }) decisions: number;
  @ApiProperty() denied: number;
  @ApiProperty({ description: 'Percent of the decisions denied' }) denyRate: number;
  @ApiProperty({ description: 'Held for a person (`require_approval`)' }) approvals: number;
  @ApiProperty() approvalRate: number;
  @ApiProperty({ description: 'Answered 5xx (or the upstream did)' }) errors: number;
  @ApiProperty() errorRate: number;
}

export class CanaryView {
  @ApiProperty({ example: 'can_4f1c2a9e0b7d3c55' }) id: string;
  @ApiProperty() policy: string;
  @ApiProperty({ enum: ['running', 'promoted', 'rolled_back', 'aborted'] }) state: string;
  @ApiProperty({ nullable: true, type: Number, description: 'Percent of the agents deciding on the new version; null for a rollout to labelled sidecars' }) share: number | null;
  @ApiProperty({ nullable: true, type: 'object', additionalProperties: { type: 'string' }, description: 'The labels of the sidecars whose agents decide on the new version; null for a share' }) sidecarLabels: Record<string, string> | null;
  @ApiProperty({ description: 'Milliseconds' }) windowMs: number;
  @ApiProperty() margin: number;
  @ApiProperty() minDecisions: number;
  @ApiProperty({ description: 'The new version as submitted' }) source: string;
  @ApiProperty() startedBy: string;
  @ApiProperty() startedAt: string;
  @ApiProperty({ description: 'When it is promoted unless rolled back first' }) endsAt: string;
  @ApiProperty({ nullable: true, type: String, description: 'Admin token id, `cli`, or `gateway` for a step the comparison made' }) endedBy: string | null;
  @ApiProperty({ nullable: true, type: String }) endedAt: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'Why it ended' }) outcome: string | null;
  @ApiProperty({ type: CohortView, description: 'Agents deciding on the new version (for labelled sidecars: the decisions of the sidecars selected)' }) canary: CohortView;
  @ApiProperty({ type: CohortView, description: 'The rest, deciding on the version in force (the gateway and the sidecars not selected)' }) stable: CohortView;
}

export class CanaryListView {
  @ApiProperty({ type: [CanaryView], description: 'Newest first (at most 50)' }) canaries: CanaryView[];
}
