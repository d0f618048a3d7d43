import { Module } from '@nestjs/common';
import { PolicySourcesModule } from '../policies/policy-sources.module';
import { AlertsModule } from '../alerts/alerts.module';
import { AuditModule } from '../audit/audit.module';
import { GatewayDecisionsModule } from '../decision/gateway-decisions.module';
import { GatewayTelemetry } from './gateway-telemetry';
import { HealthController } from './health.controller';

/** How the gateway is doing: liveness and readiness (`/health`, `/health/ready`) and its metrics and spans. */
@Module({ imports: [AuditModule, AlertsModule, GatewayDecisionsModule, PolicySourcesModule], controllers: [HealthController], providers: [GatewayTelemetry] })
export class HealthModule {}
