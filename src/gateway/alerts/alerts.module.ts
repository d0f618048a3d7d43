import { Module } from '@nestjs/common';
import { ApprovalsModule } from '../approvals/approvals.module';
import { GatewayDecisionsModule } from '../decision/gateway-decisions.module';
import { PolicySourcesModule } from '../policies/policy-sources.module';
import { AlertService } from './alert.service';
import { PolicySourceAlerts } from './policy-source-alerts';
import { CanaryAlerts } from './canary-alerts';
import { PoliciesModule } from '../policies/policies.module';

/** Outgoing alerts (docs/alerts.md) on the per-decision events of every entry point. */
@Module({
  imports: [GatewayDecisionsModule, ApprovalsModule, PoliciesModule, PolicySourcesModule],
  providers: [AlertService, PolicySourceAlerts, CanaryAlerts],
  exports: [AlertService],
})
export class AlertsModule {}
