/** Limits that keep one audit entry small whatever the request carried. */
const MAX_STRING = 2048;
const MAX_ITEMS = 100;
const MAX_KEYS = 100;
const MAX_DEPTH = 6;
export const REDACTED = '[redacted]';

/** The password of a URL's authority (`scheme://user:password@host`). */
const URL_PASSWORD = /(:\/\/[^/?#@\s:]*:)[^/?#@\s]*@/g;
/** A `name=value` pair of a query string: after `?` or `&`, or opening the string. */
const QUERY_PARAM = /(^|[?&])([^=&?#\s]+)=[^&#\s]*/g;

/**
 * Prepares values for storage: redacts arguments whose names contain a configured word
 * (AUDIT_REDACT), and in string values the URL passwords and query parameters so named, bounds size, and makes strings storable in PostgreSQL (no NUL, no lone
 * surrogates), so that no request can produce an entry the database refuses.
 */
export class AuditSanitizer {
  /**
   * Matches serialised JSON that may need work: a redaction word in any ASCII case, a NUL or a
   * lone surrogate escape, a URL password, or a percent escape (which may spell a query parameter's name).
   */
  private readonly suspicious: RegExp;
  /** Matches a lower-cased name that contains a redaction word; null when there are none. */
  private readonly secretName: RegExp | null;

  constructor(redactedNames: readonly string[]) {
    const words = redactedNames.map(wordPattern);
    const urlHints = words.length === 0 ? [] : ['://[^/"@]*:[^/"@]*@', '%[0-9a-f]{2}'];
    this.suspicious = new RegExp([...words, '\\\\u0000', '\\\\ud[89a-f]', ...urlHints].join('|'), 'i');
    this.secretName = words.length === 0 ? null : new RegExp(words.join('|'));
  }

  /**
   * The JSON text to store for a value, or null. Most values serialise straight through: only
   * a large one, or one whose text shows a redaction word, a NUL or a lone surrogate, is
   * rebuilt by `json` first, as is one JSON.stringify cannot take (a BigInt, a cycle).
   */
  serialize(value: unknown): string | null {
    if (value === null || value === undefined) return null;
    const text = plainJson(value);
    if (text !== null && text.length <= MAX_STRING && !this.mayNeedWork(text)) return text;
    return JSON.stringify(this.json(value));
  }

  /** Cleans a text column. */
  text(value: string | null): string | null {
    if (value === null) return null;
    return value.length <= MAX_STRING && value.isWellFormed() && !value.includes('\u0000') ? value : cleanString(value);
  }

  /** Cleans a JSON value, redacting by key name at every depth. */
  json(value: unknown, depth = 0): unknown {
    if (value === null || value === undefined) return null;
    if (typeof value === 'string') return cleanString(this.redactUrl(value));
    if (typeof value === 'number') return Number.isFinite(value) ? value : null;
    if (typeof value === 'boolean') return value;
    if (typeof value !== 'object') return null;
    if (depth >= MAX_DEPTH) return '[truncated]';
    // What was cut is said, as a long string's end is, in the last of the places kept (so cleaning
    // the result again, as the ingest of a sidecar's entry does, changes nothing).
    if (Array.isArray(value)) {
      if (value.length <= MAX_ITEMS) return value.map((item) => this.json(item, depth + 1));
      const kept = value.slice(0, MAX_ITEMS - 1).map((item) => this.json(item, depth + 1));
      return [...kept, `[truncated: ${value.length - kept.length} more items]`];
    }
    const result: Record<string, unknown> = {};
    const keys = Object.keys(value);
    const cut = keys.length > MAX_KEYS;
    for (const key of cut ? keys.slice(0, MAX_KEYS - 1) : keys) {
      // Defined, not assigned: assigning `__proto__` would set the prototype and lose the key.
      defineMember(result, cleanString(key), this.isSecret(key) ? REDACTED : this.json((value as Record<string, unknown>)[key], depth + 1));
    }
    if (cut) defineMember(result, '[truncated]', `${keys.length - (MAX_KEYS - 1)} more keys`);
    return result;
  }

  /** Whether serialised JSON may hold a secret-named key, a NUL or a lone surrogate (false only when it holds none). */
  private mayNeedWork(text: string): boolean {
    if (this.suspicious.test(text)) return true;
    // Beyond ASCII (more UTF-8 bytes than characters) the `i` flag and toLowerCase disagree on some
    // letters (the Kelvin sign, `İ`, `ẞ`): there, test the whole text as `isSecret` tests a key.
    return Buffer.byteLength(text) !== text.length && this.isSecret(text);
  }

  /**
   * A URL's password and the values of its secret-named query parameters, as `[redacted]`: a
   * callback URL or a connection string passed as an argument carries them as the proxied
   * request's own query string does. Prose is left alone (no `name=value` after `?` or `&`).
   */
  private redactUrl(value: string): string {
    if (this.secretName === null || !(value.includes('=') || value.includes('@'))) return value;
    return value
      .replace(URL_PASSWORD, `$1${REDACTED}@`)
      .replace(QUERY_PARAM, (param, start: string, name: string) => (this.isSecret(decodedName(name)) ? `${start}${name}=${REDACTED}` : param));
  }

  private isSecret(name: string): boolean {
    return this.secretName !== null && this.secretName.test(name.toLowerCase());
  }
}

/**
 * A redaction word as a pattern: its `-` and `_` are optional and interchangeable, since names
 * spell one word in several cases (`api_key`, `apiKey`, `api-key`, `x-api-key`).
 */
function wordPattern(word: string): string {
  return word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/[-_]/g, '[-_]?');
}

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replaceAll('+', ' '));
  } catch {
    return name;
  }
}

function defineMember(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** JSON.stringify, or null for what it cannot take (a BigInt, a cycle): `json` rebuilds those. */
function plainJson(value: unknown): string | null {
  try {
    return JSON.stringify(value) ?? null;
  } catch {
    return null;
  }
}

function cleanString(value: string): string {
  const bounded = value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}…[truncated]` : value;
  return bounded.toWellFormed().replaceAll('\u0000', '\uFFFD');
}
