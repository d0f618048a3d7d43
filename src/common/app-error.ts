import { ErrorCode, httpStatusOf } from './error-code';

/**
 * A domain error: services throw it with a code, and each transport's filter maps the code to
 * its status. `details` are extra body fields (SPEC.md adds some, e.g. `limit` and `plan`).
 */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }

  get status(): number {
    return httpStatusOf(this.code);
  }

  /** The JSON body: `{error, message, ...details}`. */
  toBody(): Record<string, unknown> {
    return { error: this.code, message: this.message, ...this.details };
  }

  static notFound(what: string, id: string): AppError {
    return new AppError(ErrorCode.NotFound, `${what} ${id} not found`);
  }

  static invalid(message: string, details: Record<string, unknown> = {}): AppError {
    return new AppError(ErrorCode.InvalidRequest, message, details);
  }
}
