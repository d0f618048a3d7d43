import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { ManagedIdentityModule } from './managed-identity.module';
import { OrganizationsModule } from '../organizations/organizations.module';
import { PolicyChangesModule } from '../changes/policy-changes.module';
import { AdapterAuthenticator } from './adapter-authenticator';
import { ApiKey } from './api-key.entity';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysService } from './api-keys.service';

/** Adapter API keys: issued, listed and revoked by admins; checked by the auth guard. */
@Module({
  imports: [TypeOrmModule.forFeature([ApiKey]), AuditModule, ManagedIdentityModule, OrganizationsModule, PolicyChangesModule],
  controllers: [ApiKeysController],
  providers: [ApiKeysService, AdapterAuthenticator],
  exports: [ApiKeysService, AdapterAuthenticator],
})
export class ApiKeysModule {}
