import type { GitSourceStatus } from '../policies/git-source-watcher';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class ServiceInfo {
  @ApiProperty({ example: 'Agent Governance Service' }) name: string;
  @ApiProperty({ example: '1.1.0' }) version: string;
  @ApiProperty({ enum: ['enforce', 'audit'] }) mode: string;
  @ApiProperty({ example: 'http://localhost:3000/docs' }) docs: string;
}

export class DatabaseHealth {
  @ApiProperty({ enum: ['up', 'down'] }) status: string;
  @ApiProperty({ enum: ['postgres', 'embedded'] }) kind: string;
  @ApiProperty({ description: 'Round trip of SELECT 1, milliseconds', nullable: true, type: Number }) latencyMs: number | null;
}

export class AuditHealth {
  @ApiProperty({ description: 'Audit entries waiting to be written' }) pending: number;
  @ApiProperty({ description: 'How long the oldest of them has waited, milliseconds; null when none waits', nullable: true, type: Number })
  oldestUnwrittenMs: number | null;
  @ApiProperty({ description: 'AUDIT_LAG_MAX_MS: past this wait /health answers 503 `degraded`' }) lagMaxMs: number;
  @ApiProperty({ description: 'When a write of the audit trail last failed; null if none has since start', nullable: true, type: String, example: '2026-11-21T10:15:29.870Z' })
  lastWriteFailure: string | null;
}

export class HealthReport {
  @ApiProperty({
    enum: ['healthy', 'degraded', 'unhealthy'],
    description: '`unhealthy`: the database does not answer; `degraded`: it does, but the audit trail is behind by more than AUDIT_LAG_MAX_MS (`degradedReason`). Both answer 503',
  })
  status: string;
  @ApiProperty({ example: '2026-11-21T10:15:30.123Z' }) timestamp: string;
  @ApiProperty() version: string;
  @ApiProperty({ enum: ['enforce', 'audit'] }) mode: string;
  @ApiProperty({ type: DatabaseHealth }) database: DatabaseHealth;
  @ApiProperty({ description: 'Audit entries waiting to be written (as `audit.pending`)' }) auditQueue: number;
  @ApiProperty({ type: AuditHealth }) audit: AuditHealth;
  @ApiProperty({ description: 'Why the audit trail is behind, while its oldest unwritten entry is older than AUDIT_LAG_MAX_MS; else null', nullable: true, type: String })
  degradedReason: string | null;
}

export class ReadinessReport {
  @ApiProperty({ enum: ['ready', 'not_ready'], description: '`not_ready` (HTTP 503) while any of `reasons` holds' })
  status: string;
  @ApiProperty({
    type: [String],
    description:
      'Why this instance should not receive traffic now: `shutting down`, `database unreachable`, `migrations pending: <names>`, or the audit trail behind by more than AUDIT_LAG_MAX_MS. Empty when ready',
    example: [],
  })
  reasons: string[];
  @ApiProperty({ example: '2026-11-21T10:15:30.123Z' }) timestamp: string;
  @ApiPropertyOptional({
    description:
      'With POLICIES_GIT_URL: `policiesGit`, the repository (`url` without credentials, `branch`), the `commit` in force, when it was applied and the branch last checked, and `error` (the commit refused or the fetch that failed, why, when) while the last good commit stays in force. With organizations’ git sources configured through the admin API: `policiesGitSources`, how many this instance follows and how many of them keep an older commit in force because the latest was refused (each organization reads its own at GET /admin/policy-git)',
  })
  details?: { policiesGit?: GitSourceStatus; policiesGitSources?: { sources: number; failing: number } };
}
