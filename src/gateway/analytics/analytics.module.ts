import { Module } from '@nestjs/common';
import { AnalyticsController } from './analytics.controller';
import { AnalyticsService } from './analytics.service';
import { AuditStatsController } from './audit-stats.controller';

/** Analytics API and the audit stats: aggregates of the decisions in the audit trail, read from its hourly rollups. */
@Module({
  controllers: [AnalyticsController, AuditStatsController],
  providers: [AnalyticsService],
  exports: [AnalyticsService],
})
export class AnalyticsModule {}
