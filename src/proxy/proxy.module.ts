import { Module } from '@nestjs/common';
import { GatewayDecisionsModule } from '../gateway-decisions/gateway-decisions.module';
import { ProxyHandler } from './proxy-handler';

/** The governed proxy (`/proxy/*`); mounted on the HTTP server by mountProxy. */
@Module({
  imports: [GatewayDecisionsModule],
  providers: [ProxyHandler],
  exports: [ProxyHandler],
})
export class ProxyModule {}
