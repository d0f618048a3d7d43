import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Agent } from '../agents/agent.entity';
import { AgentsModule } from '../agents/agents.module';
import { AuditModule } from '../audit/audit.module';
import { GatewayDecisionsModule } from '../decision/gateway-decisions.module';
import { AgentIdentityService } from './agent-identity.service';
import { DelegationGrants } from './delegation-grant';
import { DelegationService } from './delegation.service';
import { IdentityController } from './identity.controller';
import { KeysModule } from '../signing-keys/keys.module';

/**
 * The identity API over agents and the decision core: identity descriptions, trust scores and
 * delegation. Apart from KeysModule, which the agents and the decision core themselves depend on.
 */
@Module({
  imports: [TypeOrmModule.forFeature([Agent]), KeysModule, AgentsModule, AuditModule, GatewayDecisionsModule],
  controllers: [IdentityController],
  providers: [AgentIdentityService, DelegationGrants, DelegationService],
})
export class AgentIdentityModule {}
