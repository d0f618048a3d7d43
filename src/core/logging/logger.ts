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

/** The level of request log lines (LOG_REQUESTS): between `info` (30) and `warn` (40), a level of its own. */
export const ACCESS_LEVEL = 'access';

/** Writes request log lines: one JSON line each, at level `access`, whatever LOG_LEVEL says. */
export type AccessLog = (fields: Record<string, unknown>) => void;

/**
 * The request log (LOG_REQUESTS, docs/observability.md "Logs"): a logger of its own on the same
 * output, at the level `access` only, so it is on or off by LOG_REQUESTS alone and LOG_LEVEL
 * keeps meaning what it says for everything else.
 */
export function createAccessLog(name = 'gateway', fd = 1): AccessLog {
  const logger = pino<typeof ACCESS_LEVEL>(
    {
      name,
      customLevels: { [ACCESS_LEVEL]: 35 },
      level: ACCESS_LEVEL,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ fd, sync: true }),
  );
  return (fields) => logger.access(fields, 'request');
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
