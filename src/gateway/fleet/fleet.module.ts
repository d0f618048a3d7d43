import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { GatewayDecisionsModule } from '../decision/gateway-decisions.module';
import { KeysModule } from '../signing-keys/keys.module';
import { BudgetLeasesController } from './budget-leases.controller';
import { BudgetLeasesService } from './budget-leases.service';
import { BundlesController } from './bundles.controller';
import { BundlesService } from './bundles.service';
import { SidecarAuditRange } from './sidecar-audit-range.entity';
import { Sidecar } from './sidecar.entity';
import { SidecarsService } from './sidecars.service';
import { EdgeGrantsService } from './edge-grants.service';
import { OrganizationsModule } from '../organizations/organizations.module';

/** The gateway's side of the edge sidecar: signed bundles, audit ingestion, fleet status, budget leases. */
@Module({
  imports: [TypeOrmModule.forFeature([Sidecar, SidecarAuditRange]), AuditModule, KeysModule, GatewayDecisionsModule, OrganizationsModule],
  controllers: [BundlesController, BudgetLeasesController],
  providers: [BundlesService, SidecarsService, BudgetLeasesService, EdgeGrantsService],
})
export class FleetModule {}
