const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The first key that appears twice in one object of a JSON text, else undefined. JSON.parse
 * keeps the last of duplicate keys while other parsers keep the first, so a policy and an
 * upstream could read different values from one body. The text must be valid JSON (parsed
 * already): one linear pass, keys compared after unescaping (`"a"` and `"\u0061"` are one key).
 */
export function duplicateJsonKey(text: string): string | undefined {
  const objects: Array<Set<string> | null> = [];
  let expectingKey = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === OPEN_OBJECT) {
      objects.push(new Set());
      expectingKey = true;
    } else if (code === OPEN_ARRAY) {
      objects.push(null);
      expectingKey = false;
    } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
      objects.pop();
      expectingKey = false;
    } else if (code === COMMA) {
      expectingKey = objects[objects.length - 1] instanceof Set;
    } else if (code === QUOTE) {
      const end = stringEnd(text, i);
      if (expectingKey) {
        const key = JSON.parse(text.slice(i, end)) as string;
        const keys = objects[objects.length - 1]!;
        if (keys.has(key)) return key;
        keys.add(key);
        expectingKey = false;
      }
      i = end - 1;
    }
  }
  return undefined;
}

/** The index just past the string literal that opens at `start`. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === BACKSLASH) i++;
    else if (code === QUOTE) return i + 1;
  }
  return text.length;
}
