import { TextDecoder } from 'node:util';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { duplicateJsonKey } from '../common/json-duplicate-keys';
import { findProblem } from '../common/json-body-guard';
import { decodedContent } from './content-encoding';
import { parameterFields } from './parameter-fields';

/**
 * The fields a proxied body gives policies (`args.<name>`): undefined when it has none a policy
 * could read (empty, a JSON list or scalar, bytes that are no JSON such as an image), or a
 * `problem` when it carries named fields that cannot be read faithfully, which denies the request.
 */
export type BodyFields = { fields: Record<string, unknown> | undefined } | { problem: string };

const NO_FIELDS: BodyFields = { fields: undefined };

/** What a body is read as: its Content-Type and Content-Encoding as the client sent them. */
export interface BodyHeaders {
  contentType: string | undefined;
  contentEncoding: string | undefined;
}

/**
 * How policies meet a body of this Content-Type: `fields` (read, whatever the type: an upstream
 * may parse any body as JSON), or `multipart`, whose fields are not read here. A Content-Type
 * naming more than one media type is refused (400): upstreams disagree on which one counts.
 */
export function bodyKindOf(contentType: string | undefined): 'fields' | 'multipart' {
  return mediaType(contentType).startsWith('multipart/') ? 'multipart' : 'fields';
}

/** The problem of a multipart body under a policy that reads body fields. */
export const MULTIPART_PROBLEM = 'a multipart body cannot be read by policies that read body fields; send JSON or a form';

/**
 * Reads a body as the upstream may (docs/proxy.md "What the proxy reads as the upstream does"):
 * its Content-Encoding undone (content-encoding.ts, bounded by `maxBytes`), its charset decoded
 * with a byte order mark dropped; a form as a form (bracket names as lists and objects); anything
 * else as JSON whenever it parses as JSON, whatever its declared type. A body declared as JSON
 * that does not parse is a 400. A JSON object that repeats a key is a problem: parsers disagree
 * on which value wins.
 */
export async function bodyFieldsOf(body: Buffer, headers: BodyHeaders, maxBytes: number): Promise<BodyFields> {
  const decoded = await decodedContent(body, headers.contentEncoding, maxBytes);
  if (decoded.length === 0) return NO_FIELDS;
  const type = mediaType(headers.contentType);
  const text = decodedText(decoded, headers.contentType);
  if (type === 'application/x-www-form-urlencoded') return { fields: parameterFields(new URLSearchParams(text)) };
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
 * read the body's value while the upstream may act on the query's. `query` as queryFields reads it.
 */
export function queryBodyConflict(query: Record<string, unknown>, fields: Record<string, unknown>, names: ReadonlySet<string>): string | undefined {
  for (const name of names) {
    if (!Object.hasOwn(fields, name) || !Object.hasOwn(query, name)) continue;
    const given = query[name];
    const value = fields[name];
    const agrees = typeof given === 'string' && (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') && String(value) === given;
    if (!agrees) return `argument ${JSON.stringify(name)} is given in both the query and the body, with different values`;
  }
  return undefined;
}

/**
 * The body as text in its declared charset (UTF-8 when none), a byte order mark dropped and
 * malformed bytes replaced, as upstream parsers decode it; a charset nothing here decodes is 415.
 */
function decodedText(body: Buffer, contentType: string | undefined): string {
  const charset = charsetOf(contentType) ?? 'utf-8';
  try {
    return new TextDecoder(charset).decode(body);
  } catch {
    throw new AppError(ErrorCode.UnsupportedMediaType, `The charset ${JSON.stringify(charset)} of the request body cannot be read by policies; send UTF-8`);
  }
}

/**
 * The media type without parameters, lower-cased (media types are case-insensitive, RFC 9110
 * 8.3.1); a header listing several (a comma outside a quoted string) is refused.
 */
function mediaType(contentType: string | undefined): string {
  if (contentType === undefined) return '';
  if (hasListComma(contentType)) throw AppError.invalid('The Content-Type header must name one media type');
  const semicolon = contentType.indexOf(';');
  return (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}

function hasListComma(value: string): boolean {
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const character = value[i];
    if (character === '"') quoted = !quoted;
    else if (character === '\\' && quoted) i++;
    else if (character === ',' && !quoted) return true;
  }
  return false;
}

/** The `charset` parameter of a Content-Type, unquoted and lower-cased, if any. */
function charsetOf(contentType: string | undefined): string | undefined {
  const match = contentType === undefined ? null : /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType);
  if (match === null) return undefined;
  return (match[1] ?? match[2]).toLowerCase();
}

function isJsonType(type: string): boolean {
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}
