import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { OidcClient } from './oidc-client.entity';
import { OidcClientsController } from './oidc-clients.controller';
import { OidcClientsService } from './oidc-clients.service';
import { OidcVerifier } from './oidc-verifier';

/**
 * Managed identity for adapters: bearer tokens of the configured identity provider (OIDC_ISSUER)
 * verified against its keys, and the registry of the clients each organization bound by proof.
 */
@Module({
  imports: [TypeOrmModule.forFeature([OidcClient]), AuditModule],
  controllers: [OidcClientsController],
  providers: [OidcVerifier, OidcClientsService],
  exports: [OidcVerifier],
})
export class ManagedIdentityModule {}
