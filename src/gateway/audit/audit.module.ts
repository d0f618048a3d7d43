import { Module } from '@nestjs/common';
import { AuditController } from './audit.controller';
import { AuditPartitions } from './audit-partitions';
import { AuditRetention } from './audit-retention';
import { AuditService } from './audit.service';
import { AuditWriter } from './audit-writer';

/**
 * The audit trail: the batched writer, queries, verification and retention. Not global on
 * purpose: Nest shuts global modules down last, and the writer must drain while the database
 * (a global module) is still open.
 */
@Module({
  controllers: [AuditController],
  providers: [AuditWriter, AuditService, AuditPartitions, AuditRetention],
  exports: [AuditWriter, AuditService, AuditRetention],
})
export class AuditModule {}
