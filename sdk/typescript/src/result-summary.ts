/**
 * The default result summary guard() records: the result's shape, never its content (a result
 * may hold secrets), in the words every SDK uses (sdk/fixtures/result-summaries.json states the
 * rule; the Python and .NET SDKs write the same text for the same value).
 */
export function summaryOf(value: unknown): string {
  if (value === null || value === undefined) return 'returned null';
  if (typeof value === 'boolean') return 'returned boolean';
  if (typeof value === 'number' || typeof value === 'bigint') return 'returned number';
  // Code points, not UTF-16 units: what Python's len() counts.
  if (typeof value === 'string') return `returned string of ${counted([...value].length, 'character')}`;
  if (value instanceof Uint8Array || value instanceof ArrayBuffer) return `returned binary of ${counted(value.byteLength, 'byte')}`;
  if (Array.isArray(value) || value instanceof Set) return `returned list of ${counted(Array.isArray(value) ? value.length : value.size, 'item')}`;
  if (value instanceof Map) return `returned object of ${counted(value.size, 'key')}`;
  if (typeof value === 'object' && isPlainObject(value)) return `returned object of ${counted(Object.keys(value).length, 'key')}`;
  return `returned ${typeNameOf(value)}`;
}

/** The summary of a call that threw: the error's type, never its message (which may quote the call's data). */
export function raisedSummary(error: unknown): string {
  return `raised ${error instanceof Error ? typeNameOf(error) : kindOf(error)}`;
}

function counted(count: number, unit: string): string {
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}

function isPlainObject(value: object): boolean {
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function typeNameOf(value: unknown): string {
  if (typeof value === 'function') return 'function';
  const constructorName = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof constructorName === 'string' && constructorName !== '' ? constructorName : typeof value;
}

/** A thrown value that is not an Error, by its summary kind (`raised string`). */
function kindOf(value: unknown): string {
  return summaryOf(value).replace(/^returned /, '').replace(/ of .*$/, '');
}
