import { GracefulShutdown } from './core/common/graceful-shutdown';
import { AppConfig, ConfigError } from './core/config/app-config';
import { createGateway } from './gateway/app/gateway';
import { GatewayBootstrap } from './gateway/app/gateway-bootstrap';
import { createLogger } from './core/logging/logger';

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const logger = createLogger(config.logLevel);
  const app = await createGateway(config, logger);
  // Not Nest's enableShutdownHooks: it waits for keep-alive connections to time out, then re-raises the signal.
  new GracefulShutdown(app, logger, config.shutdown.timeoutMs).listen(['SIGTERM', 'SIGINT']);
  await app.listen(config.http.port, config.http.host);
  printAdminToken(app.get(GatewayBootstrap).generatedAdminToken);
  logger.info({ port: config.http.port, host: config.http.host, mode: config.mode, database: config.embeddedDatabase ? 'embedded' : 'postgres' }, 'gateway listening');
}

function loadConfigOrExit(): AppConfig {
  try {
    return AppConfig.fromEnv();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}

/**
 * The generated token goes to the operator's terminal once, on stderr between marker lines,
 * never among the JSON log lines on stdout (a log shipper would keep it).
 */
function printAdminToken(token: string | null): void {
  if (token === null) return;
  process.stderr.write(
    `\n==== ADMIN TOKEN (org_default, shown once: store it now) ====\n${token}\n` +
      `Use it as:  curl -H 'X-Admin-Token: ${token}' http://localhost:${process.env.PORT ?? 3000}/admin/agents\n` +
      `==== END ADMIN TOKEN ====\n\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`gateway failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
