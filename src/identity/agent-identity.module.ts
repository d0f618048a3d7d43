import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Agent } from '../agents/agent.entity';
import { AgentsModule } from '../agents/agents.module';
import { AuditModule } from '../audit/audit.module';
import { DecisionsModule } from '../decisions/decisions.module';
import { AgentIdentityService } from './agent-identity.service';
import { DelegationGrants } from './delegation-grant';
import { DelegationService } from './delegation.service';
import { IdentityController } from './identity.controller';
import { IdentityModule } from './identity.module';
import { OidcClient } from './oidc-client.entity';
import { OidcClientsController } from './oidc-clients.controller';
import { OidcClientsService } from './oidc-clients.service';

/**
 * The identity API over agents and the decision core: identity descriptions, trust scores,
 * delegation, and the registry of managed-identity clients. Apart from IdentityModule, which
 * the agents and the decision core themselves depend on.
 */
@Module({
  imports: [TypeOrmModule.forFeature([Agent, OidcClient]), IdentityModule, AgentsModule, AuditModule, DecisionsModule],
  controllers: [IdentityController, OidcClientsController],
  providers: [AgentIdentityService, DelegationGrants, DelegationService, OidcClientsService],
})
export class AgentIdentityModule {}
