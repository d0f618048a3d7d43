import { Global, Module } from '@nestjs/common';
import { UPSTREAM_CREDENTIALS } from '../../core/decision/upstream-credentials';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { CredentialsController } from './credentials.controller';
import { CredentialSealer } from './credential-sealer';
import { CredentialsService } from './credentials.service';
import { StoredCredentials } from './stored-credentials';
import { UpstreamCredential } from './upstream-credential.entity';

/**
 * Upstream credentials: stored sealed, managed by admins, injected by the proxy and MCP through
 * the port UPSTREAM_CREDENTIALS (global, so the transports need not import this folder).
 */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([UpstreamCredential]), AuditModule],
  controllers: [CredentialsController],
  providers: [StoredCredentials, CredentialSealer, CredentialsService, { provide: UPSTREAM_CREDENTIALS, useExisting: StoredCredentials }],
  exports: [StoredCredentials, UPSTREAM_CREDENTIALS],
})
export class CredentialsModule {}
