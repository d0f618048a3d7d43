import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { AppError } from '../core/common/app-error';

/** Prints `key: value` lines, one per field, for people and for scripts alike. */
export function printFields(fields: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(fields)) {
    process.stdout.write(`${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}\n`);
  }
}

/** Reports a failed command on stderr and makes the process exit non-zero. */
export function fail(error: unknown): void {
  const message = error instanceof AppError || error instanceof CliError ? error.message : error instanceof Error ? error.message : String(error);
  process.stderr.write(`error: ${message}\n`);
  process.exitCode = error instanceof CliError ? error.exitCode : 1;
}

/** An error meant for the person at the terminal. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** Validates CLI input with the same DTO rules as the HTTP API. */
export async function validated<T extends object>(dto: new () => T, input: Record<string, unknown>): Promise<T> {
  const instance = plainToInstance(dto, input);
  const errors = await validate(instance, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length === 0) return instance;
  throw new CliError(errors.flatMap((error) => Object.values(error.constraints ?? {})).join('; '));
}
