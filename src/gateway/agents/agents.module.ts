import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { KeysModule } from '../signing-keys/keys.module';
import { OrganizationsModule } from '../organizations/organizations.module';
import { PolicyChangesModule } from '../changes/policy-changes.module';
import { Agent } from './agent.entity';
import { AgentDirectory } from './agent-directory';
import { AgentsController } from './agents.controller';
import { AgentsService } from './agents.service';

@Module({
  imports: [TypeOrmModule.forFeature([Agent]), AuditModule, KeysModule, OrganizationsModule, PolicyChangesModule],
  controllers: [AgentsController],
  providers: [AgentsService, AgentDirectory],
  exports: [AgentsService, AgentDirectory],
})
export class AgentsModule {}
