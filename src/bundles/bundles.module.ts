import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { DecisionsModule } from '../decisions/decisions.module';
import { IdentityModule } from '../identity/identity.module';
import { BundlesController } from './bundles.controller';
import { BundlesService } from './bundles.service';
import { SidecarAuditRange } from './sidecar-audit-range.entity';
import { Sidecar } from './sidecar.entity';
import { SidecarsService } from './sidecars.service';

/** The gateway's side of the edge sidecar: signed bundles, audit ingestion, fleet status. */
@Module({
  imports: [TypeOrmModule.forFeature([Sidecar, SidecarAuditRange]), AuditModule, IdentityModule, DecisionsModule],
  controllers: [BundlesController],
  providers: [BundlesService, SidecarsService],
})
export class BundlesModule {}
