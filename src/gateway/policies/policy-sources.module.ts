import { Module } from '@nestjs/common';
import { GitPolicySync } from './git-policy-sync';
import { OrganizationsModule } from '../organizations/organizations.module';
import { PoliciesModule } from './policies.module';
import { PolicyFileLoader } from './policy-file-loader';
import { CanaryMonitor } from './canary-monitor';
import { AuditModule } from '../audit/audit.module';
import { PolicyGitSourcesController } from './policy-git-sources.controller';
import { PolicyGitSourcesService } from './policy-git-sources.service';

/**
 * Where the gateway's policies come from besides the admin API: the policies file, or a git
 * repository (POLICIES_GIT_URL), which replaces the file; organizations' git sources set through
 * the admin API (`/admin/policy-git`); and the comparison that steps canary
 * rollouts on. Apart from
 * PoliciesModule so that the CLI, which uses the policies without being their source, does not
 * load the file.
 */
@Module({
  imports: [PoliciesModule, OrganizationsModule, AuditModule],
  controllers: [PolicyGitSourcesController],
  providers: [PolicyFileLoader, GitPolicySync, CanaryMonitor, PolicyGitSourcesService],
  exports: [GitPolicySync],
})
export class PolicySourcesModule {}
