import { ErrorCode, httpStatusOf } from './error-code';

/**
 * A domain error: services throw it with a code, and each transport's filter maps the code to
 * its status. `details` are extra body fields (some answers add them, e.g. `limit` and `plan`: docs/proxy.md "Answers").
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
