import { Module } from '@nestjs/common';
import { DecisionsModule } from '../decisions/decisions.module';
import { AlertService } from './alert.service';

/** Outgoing alerts (SPEC.md "Alerts (outgoing)") on the per-decision events of every entry point. */
@Module({
  imports: [DecisionsModule],
  providers: [AlertService],
  exports: [AlertService],
})
export class AlertsModule {}
