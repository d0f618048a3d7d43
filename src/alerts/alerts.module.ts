import { Module } from '@nestjs/common';
import { GatewayDecisionsModule } from '../gateway-decisions/gateway-decisions.module';
import { AlertService } from './alert.service';

/** Outgoing alerts (docs/alerts.md) on the per-decision events of every entry point. */
@Module({
  imports: [GatewayDecisionsModule],
  providers: [AlertService],
  exports: [AlertService],
})
export class AlertsModule {}
