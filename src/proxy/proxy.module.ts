import { Module } from '@nestjs/common';
import { DecisionsModule } from '../decisions/decisions.module';
import { ProxyHandler } from './proxy-handler';

/** The governed proxy (`/proxy/*`); mounted on the HTTP server by mountProxy. */
@Module({
  imports: [DecisionsModule],
  providers: [ProxyHandler],
  exports: [ProxyHandler],
})
export class ProxyModule {}
