import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { IssuedCredentialsModule } from '../access/issued-credentials.module';
import { GatewayDecisionsModule } from '../decision/gateway-decisions.module';
import { OrganizationsModule } from '../organizations/organizations.module';
import { AuthGuard } from './auth.guard';

/** Registers the global deny-by-default guard. */
@Module({
  imports: [OrganizationsModule, GatewayDecisionsModule, IssuedCredentialsModule],
  providers: [{ provide: APP_GUARD, useClass: AuthGuard }],
})
export class AuthModule {}
