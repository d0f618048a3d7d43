import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CallerCredential } from './caller-credential.entity';
import { CallerCredentials } from './caller-credentials';
import { Organization } from './organization.entity';
import { OrganizationsController } from './organizations.controller';
import { OrganizationsService } from './organizations.service';
import { UsageMeter } from './usage-meter';

/** Organizations, the credentials their callers present (admin tokens, API keys, sidecar tokens), plans and usage. */
@Module({
  imports: [TypeOrmModule.forFeature([Organization, CallerCredential])],
  controllers: [OrganizationsController],
  providers: [OrganizationsService, UsageMeter, CallerCredentials],
  exports: [OrganizationsService, UsageMeter, CallerCredentials],
})
export class OrganizationsModule {}
