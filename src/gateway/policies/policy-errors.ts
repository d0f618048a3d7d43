import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { PolicyLoadError } from '../../core/policy-engine/errors';
import type { PolicyError } from '../../core/policy-engine/types';

/** How many errors an `invalid_policy` answer or a validation result lists. */
const LISTED_ERRORS = 100;

/** Runs a loader and turns its errors into a 400 `invalid_policy` listing the first ones. */
export function parseOrThrow<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (!(error instanceof PolicyLoadError)) throw error;
    throw invalidPolicy(error.errors);
  }
}

export function invalidPolicy(errors: PolicyError[]): AppError {
  const first = errors[0];
  const summary = first ? `${first.message} (line ${first.line}, column ${first.column})` : 'invalid policy';
  return new AppError(ErrorCode.InvalidPolicy, errors.length > 1 ? `${summary}, and ${errors.length - 1} more` : summary, listedErrors(errors));
}

/**
 * The errors an answer lists: the first LISTED_ERRORS in source order, and how many there are.
 * One 1 MiB body can hold 340,000 errors (`&a &a &a …`), a 37 MB answer; what follows the
 * first hundred is rarely more than the same mistake again.
 */
export function listedErrors(errors: PolicyError[]): { errors: PolicyError[]; errorCount: number } {
  return { errors: errors.slice(0, LISTED_ERRORS), errorCount: errors.length };
}

