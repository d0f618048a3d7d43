import { Module } from '@nestjs/common';
import { AppConfig } from '../../core/config/app-config';
import { GatewayDecisionsModule } from '../decision/gateway-decisions.module';
import { ProxyHandler } from '../../core/proxy/proxy-handler';
import { PROXY_SETTINGS, ProxySettings } from '../../core/proxy/proxy-settings';

/** The governed proxy (`/proxy/*`) on the gateway; a lean route of the gateway (gateway.ts). */
@Module({
  imports: [GatewayDecisionsModule],
  providers: [
    ProxyHandler,
    {
      provide: PROXY_SETTINGS,
      inject: [AppConfig],
      useFactory: ({ proxy, http }: AppConfig): ProxySettings => ({ ...proxy, maxInspectedBytes: http.maxJsonBytes, trustedProxies: http.trustedProxies }),
    },
  ],
  exports: [ProxyHandler],
})
export class ProxyModule {}
