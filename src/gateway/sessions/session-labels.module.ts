import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { AuditModule } from '../audit/audit.module';
import { SessionLabelsService } from './session-labels.service';

/** Clearing labels, without the session memory itself: the CLI publishes, the gateways apply. */
@Module({
  imports: [AgentsModule, AuditModule],
  providers: [SessionLabelsService],
  exports: [SessionLabelsService],
})
export class SessionLabelsModule {}
