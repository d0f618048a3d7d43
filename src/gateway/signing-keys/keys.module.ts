import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentTokenService } from './agent-token.service';
import { JwksController } from './jwks.controller';
import { KeyRing } from './key-ring';
import { SigningKey } from './signing-key.entity';
import { TokenIssuer } from './token-issuer';

/** Signing keys, agent tokens and their issuer, and the JWKS endpoint. */
@Module({
  imports: [TypeOrmModule.forFeature([SigningKey])],
  controllers: [JwksController],
  providers: [KeyRing, TokenIssuer, AgentTokenService],
  exports: [KeyRing, TokenIssuer, AgentTokenService],
})
export class KeysModule {}
