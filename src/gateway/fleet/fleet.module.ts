import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { GatewayDecisionsModule } from '../decision/gateway-decisions.module';
import { KeysModule } from '../signing-keys/keys.module';
import { BundlesController } from './bundles.controller';
import { BundlesService } from './bundles.service';
import { SidecarAuditRange } from './sidecar-audit-range.entity';
import { Sidecar } from './sidecar.entity';
import { SidecarsService } from './sidecars.service';

/** The gateway's side of the edge sidecar: signed bundles, audit ingestion, fleet status. */
@Module({
  imports: [TypeOrmModule.forFeature([Sidecar, SidecarAuditRange]), AuditModule, KeysModule, GatewayDecisionsModule],
  controllers: [BundlesController],
  providers: [BundlesService, SidecarsService],
})
export class FleetModule {}
