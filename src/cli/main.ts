#!/usr/bin/env node
import { CommandFactory } from 'nest-commander';
import { AppConfig, ConfigError } from '../core/config/app-config';
import { createLogger } from '../core/logging/logger';
import { CliModule } from './cli.module';
import { OfflineCliModule } from './offline-cli.module';

/** Commander's own outcomes that are not failures. */
const CLEAN_EXITS = new Set(['commander.helpDisplayed', 'commander.help', 'commander.version']);

/** Commands that run without the database, so they work beside a running embedded gateway (all of `policies` but `promote` and `canary`). */
const OFFLINE_COMMANDS = new Set(['policies', 'policy', 'alerts']);
/** The `policies` subcommands that work on the database. */
const DATABASE_POLICY_COMMANDS = new Set(['promote', 'canary']);

// A reader that stops early (`ags alerts config | head -1`) closes the pipe: the rest of the output is
// not wanted, so the command ends there. Unhandled, the write failed with an EPIPE stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(0);
});

async function main(): Promise<void> {
  const options = {
    logger: false as const,
    // Nest's default on a failed start (the database unreachable or in use) is process.exit(1)
    // after logging through the logger, which is off here: the command failed without a word.
    // Rethrown instead, it reaches main()'s catch, which prints it.
    abortOnError: false,
    cliName: 'ags',
    errorHandler: (error: Error & { code?: string; exitCode?: number }) => {
      process.exit(error.code !== undefined && CLEAN_EXITS.has(error.code) ? 0 : (error.exitCode ?? 1) || 1);
    },
    // Errors thrown while parsing an option (e.g. --input that is not JSON) land here.
    serviceErrorHandler: (error: Error) => {
      process.stderr.write(`error: ${error.message}\n`);
      process.exitCode = 1;
    },
  };
  if (OFFLINE_COMMANDS.has(process.argv[2] ?? '') && !DATABASE_POLICY_COMMANDS.has(process.argv[3] ?? '')) return CommandFactory.run(OfflineCliModule, options);
  const config = AppConfig.fromEnv();
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, 'ags', 2);
  await CommandFactory.run(CliModule.forRoot(config, logger), options);
}

main().catch((error: unknown) => {
  const message = error instanceof ConfigError || error instanceof Error ? error.message : String(error);
  process.stderr.write(`error: ${message}\n`);
  process.exit(1);
});
