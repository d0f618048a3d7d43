import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { duplicateJsonKey } from '../common/json-duplicate-keys';
import { findProblem } from '../common/json-body-guard';

/**
 * The fields a proxied body gives policies (`args.<name>`): undefined when it has none a policy
 * could read (empty, a JSON list or scalar, an opaque type such as text/csv), or a `problem`
 * when it carries named fields that cannot be read faithfully, which denies the request.
 */
export type BodyFields = { fields: Record<string, unknown> | undefined } | { problem: string };

const NO_FIELDS: BodyFields = { fields: undefined };

/**
 * How policies meet a body of this Content-Type: `fields` when it is read (a form; JSON under
 * any JSON type, `text/plain` or no type, as upstreams parse such bodies as JSON), `multipart`
 * when it carries fields that are not read here, `opaque` when it carries none a policy could
 * name (an image, a PDF, text/csv): it streams through unread.
 */
export function bodyKindOf(contentType: string | undefined): 'fields' | 'multipart' | 'opaque' {
  const type = mediaType(contentType);
  if (type === '' || type === 'text/plain' || type === 'application/x-www-form-urlencoded' || type.endsWith('/json') || type.endsWith('+json')) return 'fields';
  return type.startsWith('multipart/') ? 'multipart' : 'opaque';
}

/** The problem of a multipart body under a policy that reads body fields. */
export const MULTIPART_PROBLEM = 'a multipart body cannot be read by policies that read body fields; send JSON or a form';

/**
 * Reads a body of kind `fields` as the upstream may (docs/policies.md "What a condition can
 * read"): a form as a form; anything else as JSON whenever it parses as JSON, whatever its
 * declared type; a body declared as JSON that does not parse is a 400. A JSON object that
 * repeats a key is a problem: parsers disagree on which value wins.
 */
export function bodyFieldsOf(body: Buffer, contentType: string | undefined): BodyFields {
  if (body.length === 0) return NO_FIELDS;
  const type = mediaType(contentType);
  if (type === 'application/x-www-form-urlencoded') return { fields: formFields(body.toString('utf8')) };
  const text = body.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    if (isJsonType(type)) throw new AppError(ErrorCode.InvalidJson, 'Request body is not valid JSON');
    return NO_FIELDS;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return NO_FIELDS;
  const problem = findProblem(parsed);
  if (problem !== null) throw AppError.invalid(problem);
  const repeated = duplicateJsonKey(text);
  if (repeated !== undefined) return { problem: `the JSON body repeats the key ${JSON.stringify(repeated)}` };
  return { fields: parsed as Record<string, unknown> };
}

/**
 * Why the query and the body disagree on a name a policy reads, else undefined: a policy would
 * read the body's value while the upstream may act on the query's.
 */
export function queryBodyConflict(query: URLSearchParams, fields: Record<string, unknown>, names: ReadonlySet<string>): string | undefined {
  for (const name of names) {
    if (!Object.hasOwn(fields, name) || !query.has(name)) continue;
    const values = query.getAll(name);
    const value = fields[name];
    const agrees = values.length === 1 && (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') && String(value) === values[0];
    if (!agrees) return `argument ${JSON.stringify(name)} is given in both the query and the body, with different values`;
  }
  return undefined;
}

/** The fields of a form body, a repeated name as a list. */
function formFields(text: string): Record<string, unknown> {
  const fields = Object.create(null) as Record<string, unknown>;
  for (const [key, value] of new URLSearchParams(text)) {
    const existing = fields[key];
    if (existing === undefined) fields[key] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else fields[key] = [existing, value];
  }
  return fields;
}

/** The media type without parameters, lower-cased (media types are case-insensitive, RFC 9110 8.3.1). */
function mediaType(contentType: string | undefined): string {
  if (contentType === undefined) return '';
  const semicolon = contentType.indexOf(';');
  return (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}

function isJsonType(type: string): boolean {
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}
