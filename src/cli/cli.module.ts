import { DynamicModule, Module } from '@nestjs/common';
import { Logger } from 'pino';
import { AgentsModule } from '../gateway/agents/agents.module';
import { ApprovalsModule } from '../gateway/approvals/approvals.module';
import { ApprovalsApproveCommand, ApprovalsCommand, ApprovalsListCommand, ApprovalsRejectCommand } from './approvals.command';
import { AuditModule } from '../gateway/audit/audit.module';
import { ClusterModule } from '../gateway/changes/cluster.module';
import { AppConfig } from '../core/config/app-config';
import { ConfigModule } from '../core/config/config.module';
import { CredentialSealer } from '../gateway/credentials/credential-sealer';
import { CredentialsService } from '../gateway/credentials/credentials.service';
import { UpstreamCredential } from '../gateway/credentials/upstream-credential.entity';
import { DatabaseModule } from '../gateway/database/database.module';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CREDENTIALS_COMMANDS } from './credentials.command';
import { KeysModule } from '../gateway/signing-keys/keys.module';
import { LoggingModule } from '../core/logging/logging.module';
import { OrganizationsModule } from '../gateway/organizations/organizations.module';
import { AgentsCommand, AgentsCreateCommand, AgentsListCommand, AgentsRevokeCommand, AgentsTokenCommand } from './agents.command';
import { AgsCommand } from './ags.command';
import { ALERTS_COMMANDS } from './alerts.command';
import { CliBootstrap } from './cli-bootstrap';
import { PoliciesCommand, PoliciesPromoteCommand, PoliciesTestCommand, PoliciesValidateCommand } from './policies.command';
import { PoliciesModule } from '../gateway/policies/policies.module';
import { SessionLabelsModule } from '../gateway/sessions/session-labels.module';
import { SessionsClearLabelsCommand, SessionsCommand } from './sessions.command';
import { CANARY_COMMANDS } from './canary.command';
import { OrgsCommand, OrgsCreateCommand, OrgsListCommand, OrgsRotateTokenCommand } from './orgs.command';

/** Commands that work on the gateway's database, with the gateway's own services. */
@Module({})
export class CliModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    return {
      module: CliModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule.forRoot(logger),
        DatabaseModule.forRoot(),
        ClusterModule,
        AuditModule,
        OrganizationsModule,
        KeysModule,
        AgentsModule,
        ApprovalsModule,
        PoliciesModule,
        // Not CredentialsModule: its store decrypts every credential at start, which the tool neither needs nor may (it may run without the key, to list).
        TypeOrmModule.forFeature([UpstreamCredential]),
        SessionLabelsModule,
      ],
      providers: [
        CliBootstrap,
        AgsCommand,
        OrgsCommand,
        OrgsCreateCommand,
        OrgsListCommand,
        OrgsRotateTokenCommand,
        AgentsCommand,
        AgentsCreateCommand,
        AgentsListCommand,
        AgentsRevokeCommand,
        AgentsTokenCommand,
        PoliciesCommand,
        PoliciesValidateCommand,
        PoliciesTestCommand,
        PoliciesPromoteCommand,
        ...CANARY_COMMANDS,
        ApprovalsCommand,
        ApprovalsListCommand,
        ApprovalsApproveCommand,
        ApprovalsRejectCommand,
        SessionsCommand,
        SessionsClearLabelsCommand,
        ...ALERTS_COMMANDS,
        CredentialSealer,
        CredentialsService,
        ...CREDENTIALS_COMMANDS,
      ],
    };
  }
}
