/*
 * JSON text of single values, as JSON.stringify writes them, for hot paths that build their
 * JSON by hand (the sidecar's WAL lines and /enforce answers, the alert webhook's body): nearly
 * every value there is a short string that needs no escaping, a number or a boolean, and one
 * JSON.stringify of a whole object costs more than writing them out.
 */

/** What JSON.stringify escapes, and any surrogate (paired or not): such strings take its path. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A string (or null) as JSON.stringify writes it. */
export function jsonString(value: string | null): string {
  if (value === null) return 'null';
  return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`;
}

/** Whether JSON.stringify escapes anything in `text` (any surrogate counts): one test over several values joined costs less than one each. */
export function needsEscape(text: string): boolean {
  return NEEDS_ESCAPE.test(text);
}

/** A number (or null) as JSON.stringify writes it: null for NaN and infinities. */
export function jsonNumber(value: number | null): string {
  return value !== null && Number.isFinite(value) ? String(value) : 'null';
}
