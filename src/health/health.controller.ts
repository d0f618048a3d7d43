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
  @ApiOperation({ summary: 'Liveness and database reachability' })
  @ApiOkResponse({ type: HealthReport })
  @ApiServiceUnavailableResponse({ description: 'The database does not answer', type: HealthReport })
  async health(@Res({ passthrough: true }) response: Response): Promise<HealthReport> {
    const latencyMs = await this.pingDatabase();
    const healthy = latencyMs !== null;
    if (!healthy) response.status(503);
    return {
      status: healthy ? 'healthy' : 'unhealthy',
      timestamp: new Date().toISOString(),
      version: this.config.version,
      mode: this.config.mode,
      database: { status: healthy ? 'up' : 'down', kind: this.connection.embedded ? 'embedded' : 'postgres', latencyMs },
      auditQueue: this.audit.pending,
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
