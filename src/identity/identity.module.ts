import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentTokenService } from './agent-token.service';
import { JwksController } from './jwks.controller';
import { KeyRing } from './key-ring';
import { OidcClient } from './oidc-client.entity';
import { OidcVerifier } from './oidc-verifier';
import { SigningKey } from './signing-key.entity';

/** Signing keys, agent tokens, the JWKS endpoint, and managed-identity (OIDC) token verification. */
@Module({
  imports: [TypeOrmModule.forFeature([SigningKey, OidcClient])],
  controllers: [JwksController],
  providers: [KeyRing, AgentTokenService, OidcVerifier],
  exports: [KeyRing, AgentTokenService, OidcVerifier],
})
export class IdentityModule {}
