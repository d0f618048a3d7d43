import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentTokenService } from './agent-token.service';
import { JwksController } from './jwks.controller';
import { KeyRing } from './key-ring';
import { SigningKey } from './signing-key.entity';

/** Signing keys, agent tokens and the JWKS endpoint. */
@Module({
  imports: [TypeOrmModule.forFeature([SigningKey])],
  controllers: [JwksController],
  providers: [KeyRing, AgentTokenService],
  exports: [KeyRing, AgentTokenService],
})
export class IdentityModule {}
