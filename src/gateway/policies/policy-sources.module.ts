import { Module } from '@nestjs/common';
import { GitPolicySync } from './git-policy-sync';
import { OrganizationsModule } from '../organizations/organizations.module';
import { PoliciesModule } from './policies.module';
import { PolicyFileLoader } from './policy-file-loader';
import { CanaryMonitor } from './canary-monitor';

/**
 * Where the gateway's policies come from besides the admin API: the policies file, or a git
 * repository (POLICIES_GIT_URL), which replaces the file; and the comparison that steps canary
 * rollouts on. Apart from
 * PoliciesModule so that the CLI, which uses the policies without being their source, does not
 * load the file.
 */
@Module({
  imports: [PoliciesModule, OrganizationsModule],
  providers: [PolicyFileLoader, GitPolicySync, CanaryMonitor],
  exports: [GitPolicySync],
})
export class PolicySourcesModule {}
