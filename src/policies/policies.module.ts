import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { OrganizationsModule } from '../organizations/organizations.module';
import { PoliciesController } from './policies.controller';
import { PoliciesService } from './policies.service';
import { PolicyChangesModule } from '../policy-changes/policy-changes.module';
import { PolicyFileLoader } from './policy-file-loader';
import { PolicyRegistry } from './policy-registry';
import { Policy } from './policy.entity';
import { PolicyTestFile } from './policy-test.entity';
import { PolicyTestsController } from './policy-tests.controller';
import { PolicyTestsService } from './policy-tests.service';
import { PolicyVersion } from '../policy-changes/policy-version.entity';

/** Policy storage, versions, the admin API, the policies file and the compiled-set registry. */
@Module({
  imports: [TypeOrmModule.forFeature([Policy, PolicyVersion, PolicyTestFile]), AuditModule, OrganizationsModule, PolicyChangesModule],
  controllers: [PoliciesController, PolicyTestsController],
  providers: [PoliciesService, PolicyTestsService, PolicyRegistry, PolicyFileLoader],
  exports: [PoliciesService, PolicyRegistry, PolicyChangesModule],
})
export class PoliciesModule {}
