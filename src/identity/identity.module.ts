import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentTokenService } from './agent-token.service';
import { JwksController } from './jwks.controller';
import { KeyRing } from './key-ring';
import { OidcClient } from './oidc-client.entity';
import { OidcVerifier } from './oidc-verifier';
import { SigningKey } from './signing-key.entity';
import { TokenIssuer } from './token-issuer';

/** Signing keys, agent tokens, the JWKS endpoint, and managed-identity (OIDC) token verification. */
@Module({
  imports: [TypeOrmModule.forFeature([SigningKey, OidcClient])],
  controllers: [JwksController],
  providers: [KeyRing, TokenIssuer, AgentTokenService, OidcVerifier],
  exports: [KeyRing, TokenIssuer, AgentTokenService, OidcVerifier],
})
export class IdentityModule {}
