import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ApiKeysModule } from '../access/api-keys.module';
import { GatewayDecisionsModule } from '../decision/gateway-decisions.module';
import { OrganizationsModule } from '../organizations/organizations.module';
import { SidecarTokensModule } from '../access/sidecar-tokens.module';
import { AuthGuard } from './auth.guard';

/** Registers the global deny-by-default guard. */
@Module({
  imports: [OrganizationsModule, GatewayDecisionsModule, ApiKeysModule, SidecarTokensModule],
  providers: [{ provide: APP_GUARD, useClass: AuthGuard }],
})
export class AuthModule {}
