import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { CanaryStep, PolicyCanariesService } from '../policies/policy-canaries.service';
import { Alert, newAlertId } from './alert';
import { AlertService } from './alert.service';

/**
 * An alert for every step of a canary rollout (docs/policies.md "Canary rollouts"), sent whatever
 * ALERT_ON says: a rollback is a warning (a new version denied more than the one in force), the
 * other steps are information.
 */
@Injectable()
export class CanaryAlerts implements OnModuleInit, OnModuleDestroy {
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly canaries: PolicyCanariesService,
    private readonly alerts: AlertService,
  ) {}

  onModuleInit(): void {
    this.unsubscribe = this.canaries.onStep((step) => this.alerts.notify(canaryAlert(step)));
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }
}

const TITLES: Record<CanaryStep['step'], string> = {
  started: 'started',
  promoted: 'promoted',
  rolled_back: 'rolled back',
  aborted: 'aborted',
};

/** The alert of one step; `orgId` spends the organization's ALERT_RATE_LIMIT budget. */
export function canaryAlert({ step, canary }: CanaryStep): Alert {
  const rates = `canary ${canary.canary.denyRate}% denied of ${canary.canary.decisions}, rest ${canary.stable.denyRate}% of ${canary.stable.decisions}`;
  const message =
    step === 'started'
      ? `A new version of policy ${canary.policy} is in force for ${cohortOf(canary)} until ${canary.endsAt}, unless its deny rate exceeds the rest's by more than ${canary.margin} points.`
      : `${canary.outcome ?? TITLES[step]} (${rates}).`;
  return {
    id: newAlertId(),
    timestamp: new Date().toISOString(),
    severity: step === 'rolled_back' ? 'warning' : 'info',
    trigger: 'policy_canary',
    title: `Canary rollout of policy ${canary.policy} ${TITLES[step]} (${canary.id})`,
    message,
    entry: { traceId: '', agentId: '', agentName: '', trustTier: '', action: `policies:canary.${step}`, method: '', path: '', decision: step, policyName: canary.policy, reason: message },
    orgId: null,
  };
}

/** Who decides on the new version, in words. */
export function cohortOf(canary: CanaryStep['canary']): string {
  if (canary.sidecarLabels === null) return `${canary.share}% of the agents`;
  return `every agent at the sidecars labelled ${Object.entries(canary.sidecarLabels).map(([name, value]) => `${name}=${value}`).join(', ')}`;
}
