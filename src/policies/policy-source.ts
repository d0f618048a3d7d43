import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';

/**
 * The policy text of a request body: YAML arrives as text (application/yaml, text/yaml), JSON
 * as the parsed object, which is kept as pretty JSON (JSON is valid YAML for the loader).
 */
export function policySourceOf(body: unknown): string {
  if (typeof body === 'string' && body.trim() !== '') return body;
  if (typeof body === 'object' && body !== null && Object.keys(body).length > 0) return JSON.stringify(body, null, 2);
  throw new AppError(ErrorCode.UnsupportedMediaType, 'Send the policy as application/json or application/yaml');
}

/** Proposed policies inside a JSON request: YAML/JSON text, a list of policies, or a `{policies: [...]}` object. */
export function proposedSourceOf(value: unknown, field = 'policies'): string {
  if (typeof value === 'string' && value.trim() !== '') return value;
  if (Array.isArray(value)) return JSON.stringify({ policies: value }, null, 2);
  if (typeof value === 'object' && value !== null) return JSON.stringify(value, null, 2);
  throw AppError.invalid(`${field} must be policy YAML/JSON text, a list of policies, or a policy object`);
}
