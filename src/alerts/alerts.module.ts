import { Module } from '@nestjs/common';
import { ApprovalsModule } from '../approvals/approvals.module';
import { GatewayDecisionsModule } from '../gateway-decisions/gateway-decisions.module';
import { AlertService } from './alert.service';

/** Outgoing alerts (docs/alerts.md) on the per-decision events of every entry point. */
@Module({
  imports: [GatewayDecisionsModule, ApprovalsModule],
  providers: [AlertService],
  exports: [AlertService],
})
export class AlertsModule {}
