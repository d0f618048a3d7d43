import { Module } from '@nestjs/common';
import { AdapterAuthenticator } from '../access/adapter-authenticator';
import { IssuedCredentialsModule } from '../access/issued-credentials.module';
import { AuditModule } from '../audit/audit.module';
import { StoredOutcomes } from '../audit/stored-outcomes';
import { AppConfig } from '../../core/config/app-config';
import { ADAPTER_AUTHENTICATION, OUTCOME_LEDGER } from '../../core/decision/adapter-ports';
import { GatewayDecisionsModule } from '../decision/gateway-decisions.module';
import { PoliciesModule } from '../policies/policies.module';
import { ADAPTER_HTTP_SETTINGS, AdapterHttpHandler, AdapterHttpSettings } from '../../core/pdp/adapter-http.handler';
import { OutcomeRecorder } from '../../core/pdp/outcome-recorder';
import { PdpGrpcController } from './pdp-grpc.controller';
import { PdpService } from '../../core/pdp/pdp.service';
import { PolicyChangeFeed } from './policy-change-feed';

/**
 * The policy decision point on the gateway: gRPC (Evaluate, EvaluateStream, Subscribe) and the
 * adapter endpoints (`/v1/check`, `/api/v1/pdp/evaluate`, `/v1/audit`), whose ports are bound
 * to API keys and managed identities and to the audit trail.
 */
@Module({
  imports: [GatewayDecisionsModule, IssuedCredentialsModule, AuditModule, PoliciesModule],
  controllers: [PdpGrpcController],
  providers: [
    PdpService,
    AdapterHttpHandler,
    OutcomeRecorder,
    PolicyChangeFeed,
    { provide: ADAPTER_AUTHENTICATION, useExisting: AdapterAuthenticator },
    { provide: OUTCOME_LEDGER, useClass: StoredOutcomes },
    { provide: ADAPTER_HTTP_SETTINGS, inject: [AppConfig], useFactory: (config: AppConfig): AdapterHttpSettings => ({ maxJsonBytes: config.http.maxJsonBytes }) },
  ],
  exports: [AdapterHttpHandler],
})
export class PdpModule {}
