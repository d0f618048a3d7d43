import { Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config';

/** Provides the validated AppConfig to every module; read once at boot. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig) {
    return { module: ConfigModule, providers: [{ provide: AppConfig, useValue: config }], exports: [AppConfig] };
  }
}
