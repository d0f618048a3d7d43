import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { ManagedIdentityModule } from './managed-identity.module';
import { OrganizationsModule } from '../organizations/organizations.module';
import { PolicyChangesModule } from '../changes/policy-changes.module';
import { AdapterAuthenticator } from './adapter-authenticator';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysService } from './api-keys.service';
import { IssuedCredentialsService } from './issued-credentials.service';
import { SidecarTokensController } from './sidecar-tokens.controller';

/**
 * API keys and sidecar tokens: issued, listed and revoked by admins (one service, a controller
 * per route family); API keys checked for the auth guard and the adapter endpoints. Sidecar
 * tokens are checked by the auth guard itself (CallerCredentials).
 */
@Module({
  imports: [AuditModule, ManagedIdentityModule, OrganizationsModule, PolicyChangesModule],
  controllers: [ApiKeysController, SidecarTokensController],
  providers: [IssuedCredentialsService, ApiKeysService, AdapterAuthenticator],
  exports: [ApiKeysService, AdapterAuthenticator],
})
export class IssuedCredentialsModule {}
