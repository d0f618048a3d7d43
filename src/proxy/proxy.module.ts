import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { AuditModule } from '../audit/audit.module';
import { DecisionsModule } from '../decisions/decisions.module';
import { OrganizationsModule } from '../organizations/organizations.module';
import { ProxyHandler } from './proxy-handler';

/** The governed proxy (`/proxy/*`); mounted on the HTTP server by mountProxy. */
@Module({
  imports: [AgentsModule, AuditModule, DecisionsModule, OrganizationsModule],
  providers: [ProxyHandler],
  exports: [ProxyHandler],
})
export class ProxyModule {}
