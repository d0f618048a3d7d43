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

/** Policy storage, versions, stored tests, the admin API and the compiled-set registry. */
@Module({
  imports: [TypeOrmModule.forFeature([Policy, PolicyVersion, PolicyTestFile]), AuditModule, OrganizationsModule, PolicyChangesModule],
  controllers: [PoliciesController, PolicyTestsController],
  providers: [PoliciesService, PolicyTestsService, PolicyRegistry],
  exports: [PoliciesService, PolicyRegistry, PolicyChangesModule],
})
export class PoliciesModule {}
