import pino, { Logger } from 'pino';
import type { LoggerService } from '@nestjs/common';

/** LOG_LEVEL's values, lowest first. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Keys whose values never reach a log line. */
const REDACTED_PATHS = [
  'token',
  'adminToken',
  'authorization',
  'password',
  'secret',
  '*.token',
  '*.authorization',
  '*.password',
  '*.secret',
  'headers.authorization',
  'headers["x-admin-token"]',
  'headers["x-api-key"]',
];

/** The process's JSON logger (pino). Every line a request emits carries its `traceId`. */
export function createLogger(level: LogLevel, name = 'gateway', fd = 1): Logger {
  return pino(
    {
      name,
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ fd, sync: true }),
  );
}

/**
 * Routes Nest's own log calls into the pino logger, so the whole process logs JSON. Nest's
 * `log` lines are the framework's start-up narration (each module and route, some 80 lines):
 * debug, so an operator's info log starts with what the service itself says.
 */
export class NestPinoLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, context?: string): void {
    this.logger.debug({ context }, String(message));
  }

  error(message: unknown, trace?: string, context?: string): void {
    this.logger.error({ context, trace }, String(message));
  }

  warn(message: unknown, context?: string): void {
    this.logger.warn({ context }, String(message));
  }

  debug(message: unknown, context?: string): void {
    this.logger.debug({ context }, String(message));
  }

  verbose(message: unknown, context?: string): void {
    this.logger.trace({ context }, String(message));
  }
}
