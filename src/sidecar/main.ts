import { GracefulShutdown } from '../core/common/graceful-shutdown';
import { ConfigError } from '../core/config/app-config';
import { SidecarConfig } from './sidecar-config';
import { createLogger } from '../core/logging/logger';
import { createSidecar } from './sidecar-app';

/** `npm run start:sidecar`: the edge sidecar, configured from the environment. */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger(config.logLevel, 'sidecar');
  const app = await createSidecar(config, logger);
  // As the gateway: Nest's enableShutdownHooks re-raises the signal once closed, so the process ended as killed (143) after a clean shutdown.
  new GracefulShutdown(app, logger, config.shutdownTimeoutMs).listen(['SIGTERM', 'SIGINT']);
  await app.listen(config.port, config.host);
  logger.info({ port: config.port, host: config.host, mode: config.mode, gateway: config.gatewayUrl, cacheDir: config.cacheDir }, 'sidecar listening');
}

function loadConfigOrExit(): SidecarConfig {
  try {
    return SidecarConfig.fromEnv();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`sidecar: ${error.message}\n`);
    process.exit(1);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`sidecar failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
