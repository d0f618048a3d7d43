/**
 * Run-time meaning of the comparison operators. A missing value is `undefined` and makes every
 * comparison false. The one coercion: a number against a string that is fully a finite number
 * compares numerically (HTTP query parameters arrive as strings).
 */

const NUMERIC_STRING = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** The number a string spells exactly, else NaN. */
export function numericValue(text: string): number {
  if (!NUMERIC_STRING.test(text)) return NaN;
  const value = Number(text);
  return Number.isFinite(value) ? value : NaN;
}

/** `==`: strict equality plus number/numeric-string coercion and element-wise list equality. */
export function looseEquals(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return false;
  if (a === b) return true;
  if (typeof a === 'number' && typeof b === 'string') return a === numericValue(b);
  if (typeof a === 'string' && typeof b === 'number') return numericValue(a) === b;
  if (Array.isArray(a) && Array.isArray(b)) return listsEqual(a, b);
  return false;
}

function listsEqual(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (!looseEquals(a[i], b[i])) return false;
  }
  return true;
}

/** Sign of a - b for `<`, `<=`, `>`, `>=`; NaN when the two are not comparable (so every ordering is false). */
export function orderOf(a: unknown, b: unknown): number {
  if (typeof a === 'number') {
    if (typeof b === 'number') return a - b;
    return typeof b === 'string' ? a - numericValue(b) : NaN;
  }
  if (typeof a !== 'string') return NaN;
  if (typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  return typeof b === 'number' ? numericValue(a) - b : NaN;
}

/** `contains`: substring of a string, or membership (by `==`) in a list. */
export function containsValue(container: unknown, item: unknown): boolean {
  if (typeof container === 'string') return typeof item === 'string' && container.includes(item);
  if (!Array.isArray(container) || item === undefined) return false;
  for (let i = 0; i < container.length; i++) {
    if (looseEquals(container[i], item)) return true;
  }
  return false;
}

/** `starts_with`: both sides strings. */
export function startsWith(a: unknown, b: unknown): boolean {
  return typeof a === 'string' && typeof b === 'string' && a.startsWith(b);
}

/** `ends_with`: both sides strings. */
export function endsWith(a: unknown, b: unknown): boolean {
  return typeof a === 'string' && typeof b === 'string' && a.endsWith(b);
}
