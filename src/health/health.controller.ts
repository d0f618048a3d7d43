import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Response } from 'express';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { Public } from '../common/auth-decorators';
import { DatabaseConnection } from '../database/database-connection';
import { AuditWriter } from '../audit/audit-writer';
import { HealthReport, ServiceInfo } from './health.dto';

const DATABASE_TIMEOUT_MS = 2000;

@ApiTags('service')
@Public()
@Controller()
export class HealthController {
  constructor(
    private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly connection: DatabaseConnection,
    private readonly audit: AuditWriter,
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
    // Decisions answered but not yet in the trail would be lost by a crash: past the bound, a load balancer or an operator must hear of it.
    const degradedReason =
      lag.oldestUnwrittenMs !== null && lag.oldestUnwrittenMs > lagMaxMs
        ? `audit trail behind: ${lag.pending} entries not yet written, the oldest for ${lag.oldestUnwrittenMs} ms (AUDIT_LAG_MAX_MS ${lagMaxMs})`
        : null;
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

  private async pingDatabase(): Promise<number | null> {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), DATABASE_TIMEOUT_MS)));
    const ping = this.dataSource.query('SELECT 1').then(
      () => Math.round((performance.now() - started) * 1000) / 1000,
      () => null,
    );
    const result = await Promise.race([ping, timeout]);
    clearTimeout(timer);
    return result;
  }
}
