import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Response } from 'express';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../core/config/app-config';
import { Public } from '../../core/common/auth-decorators';
import { DatabaseConnection } from '../database/database-connection';
import { AuditLag, AuditWriter } from '../audit/audit-writer';
import { GitPolicySync } from '../policies/git-policy-sync';
import { ShutdownState } from '../../core/common/shutdown-state';
import { MIGRATIONS } from '../database/migration-list';
import { HealthReport, ReadinessReport, ServiceInfo } from './health.dto';

const DATABASE_TIMEOUT_MS = 2000;
/** The migrations this build runs, by the name the migrations table records. */
const MIGRATION_NAMES: readonly string[] = MIGRATIONS.map((Migration) => new Migration().name ?? Migration.name);

@ApiTags('service')
@Public()
@Controller()
export class HealthController {
  constructor(
    private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly connection: DatabaseConnection,
    private readonly audit: AuditWriter,
    private readonly shutdown: ShutdownState,
    private readonly git: GitPolicySync,
  ) {}

  @Get('json')
  @ApiOperation({ summary: 'Service name, version, mode and documentation link' })
  @ApiOkResponse({ type: ServiceInfo })
  info(): ServiceInfo {
    return { name: 'Agent Governance Service', version: this.config.version, mode: this.config.mode, docs: `${this.config.http.publicUrl}/docs` };
  }

  @Get('health')
  @ApiOperation({ summary: 'Liveness, database reachability and audit trail lag' })
  @ApiOkResponse({ type: HealthReport })
  @ApiServiceUnavailableResponse({ description: 'The database does not answer (`unhealthy`), or the audit trail is behind by more than AUDIT_LAG_MAX_MS (`degraded`)', type: HealthReport })
  async health(@Res({ passthrough: true }) response: Response): Promise<HealthReport> {
    const latencyMs = await this.pingDatabase();
    const databaseUp = latencyMs !== null;
    const lag = this.audit.lag();
    const lagMaxMs = this.config.audit.lagMaxMs;
    const degradedReason = this.lagReason(lag);
    const status = !databaseUp ? 'unhealthy' : degradedReason !== null ? 'degraded' : 'healthy';
    if (status !== 'healthy') response.status(503);
    return {
      status,
      timestamp: new Date().toISOString(),
      version: this.config.version,
      mode: this.config.mode,
      database: { status: databaseUp ? 'up' : 'down', kind: this.connection.embedded ? 'embedded' : 'postgres', latencyMs },
      auditQueue: lag.pending,
      audit: {
        pending: lag.pending,
        oldestUnwrittenMs: lag.oldestUnwrittenMs,
        lagMaxMs,
        lastWriteFailure: lag.lastFailureMs === null ? null : new Date(lag.lastFailureMs).toISOString(),
      },
      degradedReason,
    };
  }

  /**
   * Readiness (docs/observability.md "Probes"): 503 while this instance should not receive traffic:
   * shutdown has begun, the database does not answer, a migration this build runs is not recorded
   * as applied (a database restored from before it, or swapped), or the audit trail is behind by
   * more than AUDIT_LAG_MAX_MS. `/health` stays the liveness answer.
   */
  @Get('health/ready')
  @ApiOperation({ summary: 'Readiness: whether this instance should receive traffic' })
  @ApiOkResponse({ type: ReadinessReport })
  @ApiServiceUnavailableResponse({ description: 'Shutting down, database unreachable, migrations pending, or the audit trail behind (`reasons`)', type: ReadinessReport })
  async ready(@Res({ passthrough: true }) response: Response): Promise<ReadinessReport> {
    const reasons: string[] = [];
    if (this.shutdown.shuttingDown) reasons.push('shutting down');
    if ((await this.pingDatabase()) === null) reasons.push('database unreachable');
    else {
      const pending = await this.pendingMigrations();
      if (pending === null) reasons.push('database unreachable');
      else if (pending.length > 0) reasons.push(`migrations pending: ${pending.join(', ')}`);
    }
    const lagReason = this.lagReason(this.audit.lag());
    if (lagReason !== null) reasons.push(lagReason);
    if (reasons.length > 0) response.status(503);
    const git = this.git.status;
    const report: ReadinessReport = { status: reasons.length > 0 ? 'not_ready' : 'ready', reasons, timestamp: new Date().toISOString() };
    // Not a reason: the last good commit stays in force, so the instance still decides as it should.
    const stored = this.git.storedSummary();
    // Counts only: the probe is public, and one organization's repository is no other's business.
    if (git !== null || stored.sources > 0) report.details = { ...(git === null ? {} : { policiesGit: git }), ...(stored.sources > 0 ? { policiesGitSources: stored } : {}) };
    return report;
  }

  /** Decisions answered but not yet in the trail would be lost by a crash: past the bound, a load balancer or an operator must hear of it. */
  private lagReason(lag: AuditLag): string | null {
    const lagMaxMs = this.config.audit.lagMaxMs;
    if (lag.oldestUnwrittenMs === null || lag.oldestUnwrittenMs <= lagMaxMs) return null;
    return `audit trail behind: ${lag.pending} entries not yet written, the oldest for ${lag.oldestUnwrittenMs} ms (AUDIT_LAG_MAX_MS ${lagMaxMs})`;
  }

  /** The migrations of this build the database has not recorded; null when it does not answer. */
  private async pendingMigrations(): Promise<string[] | null> {
    const rows = await this.bounded(this.dataSource.query<Array<{ name: string }>>('SELECT name FROM migrations'));
    if (rows === null) return null;
    const applied = new Set(rows.map((row) => row.name));
    return MIGRATION_NAMES.filter((name) => !applied.has(name));
  }

  private async pingDatabase(): Promise<number | null> {
    const started = performance.now();
    const answered = await this.bounded(this.dataSource.query('SELECT 1'));
    return answered === null ? null : Math.round((performance.now() - started) * 1000) / 1000;
  }

  /** The query's result, or null when it fails or takes longer than DATABASE_TIMEOUT_MS. */
  private async bounded<T>(query: Promise<T>): Promise<T | null> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), DATABASE_TIMEOUT_MS)));
    const result = await Promise.race([query.catch(() => null), timeout]);
    clearTimeout(timer);
    return result;
  }
}
