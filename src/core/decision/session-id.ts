import { AppError } from '../common/app-error';

/** Longest session id a request may name (X-Service-Session, `session_id`, an MCP session). */
export const MAX_SESSION_ID_LENGTH = 128;
const SESSION_ID = /^[A-Za-z0-9._:-]+$/;

/**
 * The session id a request names, checked: undefined when none is named, else 1 to 128
 * characters of A-Z a-z 0-9 . _ : - (it is a key of the session store and of budget totals,
 * and is shown in the audit trail). Anything else is a 400 naming the field.
 */
export function checkedSessionId(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw AppError.invalid(`${field} must be a string`);
  if (value.length > MAX_SESSION_ID_LENGTH) throw AppError.invalid(`${field} must be at most ${MAX_SESSION_ID_LENGTH} characters`);
  if (!SESSION_ID.test(value)) throw AppError.invalid(`${field} must be characters of A-Z a-z 0-9 . _ : -`);
  return value;
}
