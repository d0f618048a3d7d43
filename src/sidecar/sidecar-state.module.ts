import { Global, Module } from '@nestjs/common';
import type { Logger } from 'pino';
import { AuditSanitizer } from '../core/audit-record/audit-sanitizer';
import { SidecarConfig } from './sidecar-config';
import { PROXY_SETTINGS } from '../core/proxy/proxy-settings';
import { LOGGER } from '../core/logging/logging.module';
import { AuditWal } from './audit-wal';
import { BundleStore } from './bundle-store';
import { GatewayLink } from './gateway-link';
import { sidecarIdentity } from './sidecar-identity';

/**
 * The sidecar's state, shared by the decision core's sources and its transports: its
 * configuration, the bundle in force, the audit buffer and the link to the gateway.
 */
@Global()
@Module({})
export class SidecarStateModule {
  static forRoot(config: SidecarConfig) {
    return {
      module: SidecarStateModule,
      providers: [
        { provide: SidecarConfig, useValue: config },
        { provide: PROXY_SETTINGS, useValue: config.proxy },
        { provide: BundleStore, inject: [LOGGER], useFactory: (logger: Logger) => new BundleStore(config.cacheDir, config.bundlePublicKey, logger, config.labels) },
        {
          provide: AuditWal,
          inject: [LOGGER],
          useFactory: (logger: Logger) => AuditWal.open(config.cacheDir, config.auditBufferMaxBytes, new AuditSanitizer([...config.auditRedact]), logger, config.auditDurability),
        },
        { provide: GatewayLink, inject: [LOGGER], useFactory: (logger: Logger) => new GatewayLink(config, sidecarIdentity(config), logger) },
      ],
      exports: [SidecarConfig, PROXY_SETTINGS, BundleStore, AuditWal, GatewayLink],
    };
  }
}
