import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { GitPolicySync, GitSourceRefusal } from '../policies/git-policy-sync';
import { Alert, newAlertId } from './alert';
import { AlertService } from './alert.service';

/**
 * Alerts when the policies from git cannot be brought up to date (docs/policies.md "Policies
 * from git"): the repository unreachable, a commit unsigned, unparsable or failing its tests.
 * Critical, and sent whatever ALERT_ON says: the policies in force are no longer the branch's.
 */
@Injectable()
export class PolicySourceAlerts implements OnModuleInit, OnModuleDestroy {
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly git: GitPolicySync,
    private readonly alerts: AlertService,
  ) {}

  onModuleInit(): void {
    this.unsubscribe = this.git.onRefusal((refusal) => this.alerts.notify(gitAlert(refusal)));
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }
}

function gitAlert({ commit, message, status }: GitSourceRefusal): Alert {
  const inForce = status.commit?.slice(0, 12) ?? 'none';
  return {
    id: newAlertId(),
    timestamp: status.error?.at ?? new Date().toISOString(),
    severity: 'critical',
    trigger: 'policy_source',
    title: commit === null ? `Policies from git: ${status.url} cannot be fetched` : `Policies from git: commit ${commit.slice(0, 12)} refused`,
    message: `${message}. The last good commit (${inForce}) stays in force; branch ${status.branch} is fetched again at every poll (organization ${status.orgId}).`,
    entry: { traceId: '', agentId: '', agentName: '', trustTier: '', action: 'policies:git', method: '', path: '', decision: 'refused', policyName: '', reason: message },
  };
}
