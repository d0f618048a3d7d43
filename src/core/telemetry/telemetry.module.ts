import { DynamicModule, Module } from '@nestjs/common';
import type { Logger } from 'pino';
import { LOGGER } from '../logging/logging.module';
import { Telemetry, TelemetryOptions } from './telemetry';

/** Provides the app's Telemetry everywhere (the gateway and the sidecar each import it once). */
@Module({})
export class TelemetryModule {
  static forRoot(options: TelemetryOptions): DynamicModule {
    return {
      module: TelemetryModule,
      global: true,
      providers: [{ provide: Telemetry, inject: [LOGGER], useFactory: (logger: Logger) => new Telemetry(options, logger) }],
      exports: [Telemetry],
    };
  }
}
