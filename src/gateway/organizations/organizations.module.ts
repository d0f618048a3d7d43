import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AdminToken } from './admin-token.entity';
import { Organization } from './organization.entity';
import { OrganizationsController } from './organizations.controller';
import { OrganizationsService } from './organizations.service';
import { UsageMeter } from './usage-meter';

/** Organizations, their admin tokens, plans and usage. */
@Module({
  imports: [TypeOrmModule.forFeature([Organization, AdminToken])],
  controllers: [OrganizationsController],
  providers: [OrganizationsService, UsageMeter],
  exports: [OrganizationsService, UsageMeter],
})
export class OrganizationsModule {}
