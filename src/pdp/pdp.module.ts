import { Module } from '@nestjs/common';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { AuditModule } from '../audit/audit.module';
import { GatewayDecisionsModule } from '../gateway-decisions/gateway-decisions.module';
import { PoliciesModule } from '../policies/policies.module';
import { AdapterAuditService } from './adapter-audit.service';
import { AdapterController } from './adapter.controller';
import { PdpGrpcController } from './pdp-grpc.controller';
import { PdpHttpHandler } from './pdp-http.handler';
import { PdpService } from './pdp.service';
import { PolicyChangeFeed } from './policy-change-feed';

/** The policy decision point: gRPC (Evaluate, EvaluateStream, Subscribe), its HTTP fallback, and the adapter endpoints. */
@Module({
  imports: [GatewayDecisionsModule, ApiKeysModule, AuditModule, PoliciesModule],
  controllers: [PdpGrpcController, AdapterController],
  providers: [PdpService, PdpHttpHandler, PolicyChangeFeed, AdapterAuditService],
  exports: [PdpHttpHandler],
})
export class PdpModule {}
