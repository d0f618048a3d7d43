import { DynamicModule, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Logger } from 'pino';
import { AgentsModule } from '../agents/agents.module';
import { AlertsModule } from '../alerts/alerts.module';
import { AnalyticsModule } from '../analytics/analytics.module';
import { IssuedCredentialsModule } from '../access/issued-credentials.module';
import { AuditModule } from '../audit/audit.module';
import { FleetModule } from '../fleet/fleet.module';
import { AuthModule } from '../auth/auth.module';
import { BillingModule } from '../billing/billing.module';
import { ClusterModule } from '../changes/cluster.module';
import { CredentialsModule } from '../credentials/credentials.module';
import { AppConfig } from '../../core/config/app-config';
import { ConfigModule } from '../../core/config/config.module';
import { DatabaseModule } from '../database/database.module';
import { GatewayDecisionsModule } from '../decision/gateway-decisions.module';
import { HealthModule } from '../health/health.module';
import { PoliciesModule } from '../policies/policies.module';
import { PolicySourcesModule } from '../policies/policy-sources.module';
import { ProxyModule } from '../proxy/proxy.module';
import { KeysModule } from '../signing-keys/keys.module';
import { DecisionTokensModule } from '../signing-keys/decision-tokens.module';
import { ManagedIdentityModule } from '../access/managed-identity.module';
import { McpGatewayModule } from '../mcp/mcp-gateway.module';
import { ApprovalsModule } from '../approvals/approvals.module';
import { AgentIdentityModule } from '../identity/agent-identity.module';
import { LoggingModule } from '../../core/logging/logging.module';
import { OrganizationsModule } from '../organizations/organizations.module';
import { PdpModule } from '../pdp/pdp.module';
import { SessionsModule } from '../sessions/sessions.module';
import { GatewayBootstrap } from './gateway-bootstrap';
import { ShutdownStateModule } from '../../core/common/shutdown-state';
import { TelemetryModule } from '../../core/telemetry/telemetry.module';

/** The gateway: every domain module, on one configuration, logger and database. */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule.forRoot(logger),
        ShutdownStateModule,
        TelemetryModule.forRoot({ settings: config.telemetry, app: 'gateway', host: config.http.host, version: config.version }),
        DatabaseModule.forRoot(),
        ClusterModule,
        ScheduleModule.forRoot(),
        AuditModule,
        AnalyticsModule,
        OrganizationsModule,
        KeysModule,
        DecisionTokensModule,
        ManagedIdentityModule,
        AgentsModule,
        SessionsModule,
        IssuedCredentialsModule,
        CredentialsModule,
        AuthModule,
        HealthModule,
        PoliciesModule,
        PolicySourcesModule,
        GatewayDecisionsModule,
        ProxyModule,
        PdpModule,
        McpGatewayModule,
        ApprovalsModule,
        BillingModule,
        AgentIdentityModule,
        FleetModule,
        AlertsModule,
      ],
      providers: [GatewayBootstrap],
    };
  }
}
