/**
 * RFC 8785 (JCS) canonical JSON of a parsed JSON value: object keys sorted by UTF-16 code units
 * at every depth, no whitespace, strings and numbers as ECMAScript's JSON.stringify writes them
 * (RFC 8785 sections 3.2.2 and 3.2.3 are defined by it). What a tool call's decision token binds
 * of its arguments, so the order and spacing the JSON arrived in do not matter.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError('canonicalJson: a number JSON cannot hold');
    const text = JSON.stringify(value);
    return text === undefined ? 'null' : text;
  }
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item === undefined ? null : item)).join(',')}]`;
  const record = value as Record<string, unknown>;
  // Array.prototype.sort compares strings by UTF-16 code units, the order RFC 8785 3.2.3 asks for.
  const keys = Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(',')}}`;
}
