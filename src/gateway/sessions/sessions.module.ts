import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { AuditModule } from '../audit/audit.module';
import { GatewayDecisionsModule } from '../decision/gateway-decisions.module';
import { SessionLabelsModule } from './session-labels.module';
import { SessionMemorySync } from './session-memory-sync';
import { SessionTimelineService } from './session-timeline.service';
import { SessionsController } from './sessions.controller';

/** The sessions admin API: timelines and clearing labels, applied to this instance's session memory. */
@Module({
  imports: [AgentsModule, AuditModule, GatewayDecisionsModule, SessionLabelsModule],
  controllers: [SessionsController],
  providers: [SessionTimelineService, SessionMemorySync],
})
export class SessionsModule {}
