/**
 * The fields of a query string or form body as the common upstream frameworks read them (qs in
 * Express and body-parser, PHP, Rails, Laravel): a bracket name is a list or an object under
 * the name before its first `[` (`amount[]=5` and `amount[0]=5` are `amount: ["5"]`,
 * `amount[x]=5` is `amount: {x: "5"}`), so a policy on `args.amount` reads what such an upstream
 * acts on (docs/proxy.md "What the proxy reads as the upstream does"). A plain name given more
 * than once is a list, as before. Fields are null-prototype objects: a name such as `__proto__`
 * is a field like any other.
 */
export function parameterFields(pairs: Iterable<[string, string]>): Record<string, unknown> {
  const fields = emptyRecord();
  for (const [key, value] of pairs) {
    const segments = bracketSegments(key);
    if (segments === null) addValue(fields, key, value);
    else addNested(fields, segments, value);
  }
  return fields;
}

/** qs's default depth: what follows the fifth bracket group stays one name. */
const MAX_DEPTH = 5;

/**
 * The names a bracket key stands for, as qs splits it: `a[b][]` → ['a', 'b', ''], `[a]` → ['a'],
 * text between groups ignored, an unterminated group kept whole (`a[` → ['a', '[']); null for a
 * key with no `[` at all.
 */
function bracketSegments(key: string): string[] | null {
  let open = key.indexOf('[');
  if (open === -1) return null;
  const segments = open > 0 ? [key.slice(0, open)] : [];
  for (let groups = 0; open !== -1 && groups < MAX_DEPTH; groups++) {
    const close = matchingClose(key, open);
    if (close === -1) {
      segments.push(key.slice(open));
      return segments;
    }
    segments.push(key.slice(open + 1, close));
    open = key.indexOf('[', close + 1);
  }
  if (open !== -1) segments.push(key.slice(open));
  return segments;
}

/** The `]` closing the group opened at `open`, nested brackets balanced; -1 when unterminated. */
function matchingClose(key: string, open: number): number {
  let level = 0;
  for (let i = open; i < key.length; i++) {
    if (key[i] === '[') level++;
    else if (key[i] === ']' && --level === 0) return i;
  }
  return -1;
}

/** Puts `value` where `segments` (from `index`) name: `''` or a small number is a list, anything else an object key. */
function addNested(container: Record<string, unknown>, segments: string[], value: string, index = 0): void {
  const name = segments[index];
  if (index === segments.length - 1) return addValue(container, name, value);
  if (!isListIndex(segments[index + 1])) return addNested(objectAt(container, name), segments, value, index + 1);
  const list = listAt(container, name);
  if (index + 1 === segments.length - 1) {
    list.push(value);
    return;
  }
  const element = emptyRecord();
  list.push(element);
  addNested(element, segments, value, index + 2);
}

/** `[]`, or an index below qs's arrayLimit (20; a larger one is an object key). */
function isListIndex(segment: string): boolean {
  return segment === '' || (/^(?:0|[1-9]\d?)$/.test(segment) && Number(segment) < 20);
}

/** The list at `name`, made one from what was there (a scalar or an object becomes its first element). */
function listAt(container: Record<string, unknown>, name: string): unknown[] {
  const existing = container[name];
  if (Array.isArray(existing)) return existing;
  const list: unknown[] = existing === undefined ? [] : [existing];
  container[name] = list;
  return list;
}

/** The object at `name`; a value of another kind there is kept beside it in a list, which no comparison reads as a number. */
function objectAt(container: Record<string, unknown>, name: string): Record<string, unknown> {
  const existing = container[name];
  if (isRecord(existing)) return existing;
  const object = emptyRecord();
  if (existing === undefined) container[name] = object;
  else if (Array.isArray(existing)) existing.push(object);
  else container[name] = [existing, object];
  return object;
}

function addValue(container: Record<string, unknown>, key: string, value: string): void {
  const existing = container[key];
  if (existing === undefined) container[key] = value;
  else if (Array.isArray(existing)) existing.push(value);
  else container[key] = [existing, value];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function emptyRecord(): Record<string, unknown> {
  return Object.create(null) as Record<string, unknown>;
}
