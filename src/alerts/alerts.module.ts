import { Module } from '@nestjs/common';
import { GatewayDecisionsModule } from '../gateway-decisions/gateway-decisions.module';
import { AlertService } from './alert.service';

/** Outgoing alerts (SPEC.md "Alerts (outgoing)") on the per-decision events of every entry point. */
@Module({
  imports: [GatewayDecisionsModule],
  providers: [AlertService],
  exports: [AlertService],
})
export class AlertsModule {}
