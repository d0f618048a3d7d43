import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { OrganizationsModule } from '../organizations/organizations.module';
import { PoliciesController } from './policies.controller';
import { PoliciesService } from './policies.service';
import { PolicyChangesModule } from '../changes/policy-changes.module';
import { PolicyRegistry } from './policy-registry';
import { Policy } from './policy.entity';
import { PolicyTestFile } from './policy-test.entity';
import { PolicyTestsController } from './policy-tests.controller';
import { PolicyTestsService } from './policy-tests.service';
import { PolicyVersion } from '../changes/policy-version.entity';
import { PolicyCanariesController } from './policy-canaries.controller';
import { PolicyCanariesService } from './policy-canaries.service';
import { PolicyCanary } from './policy-canary.entity';

/** Policy storage, versions, stored tests, canary rollouts, the admin API and the compiled-set registry. */
@Module({
  imports: [TypeOrmModule.forFeature([Policy, PolicyVersion, PolicyTestFile, PolicyCanary]), AuditModule, OrganizationsModule, PolicyChangesModule],
  controllers: [PoliciesController, PolicyTestsController, PolicyCanariesController],
  providers: [PoliciesService, PolicyTestsService, PolicyRegistry, PolicyCanariesService],
  exports: [PoliciesService, PolicyRegistry, PolicyCanariesService, PolicyChangesModule],
})
export class PoliciesModule {}
