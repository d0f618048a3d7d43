/**
 * Maps an offset inside a YAML scalar's value back to the source, so an error inside a condition
 * points at the right line and column whatever the quoting or folding. If our reading of the
 * scalar does not reproduce yaml's value exactly, we fall back to the scalar's start.
 */
import { Scalar } from 'yaml';

const DOUBLE_QUOTE_ESCAPES: Readonly<Record<string, string>> = {
  '0': '\0',
  a: '\x07',
  b: '\b',
  t: '\t',
  '\t': '\t',
  n: '\n',
  v: '\v',
  f: '\f',
  r: '\r',
  e: '\x1b',
  ' ': ' ',
  '"': '"',
  '/': '/',
  '\\': '\\',
  N: '\x85',
  _: '\xa0',
  L: '\u2028',
  P: '\u2029',
};

const HEX_ESCAPE_LENGTH: Readonly<Record<string, number>> = { x: 2, u: 4, U: 8 };

/** Source offset of the character at `inner` in the scalar's string value. */
export function scalarSourceOffset(source: string, scalar: Scalar, inner: number): number {
  const start = scalar.range?.[0] ?? 0;
  if (typeof scalar.value !== 'string' && typeof scalar.value !== 'boolean') return start;
  const value = String(scalar.value);
  const map = scalarOffsetMap(source, scalar, value);
  if (map === undefined) return start;
  return map[Math.min(inner, map.length - 1)];
}

class Reading {
  text = '';
  readonly map: number[] = [];

  push(chars: string, at: number): void {
    this.text += chars;
    for (let i = 0; i < chars.length; i++) this.map.push(at);
  }

  /** The map for `value` (plus its end), when this reading reproduces it. */
  mapFor(value: string, endOffset: number): number[] | undefined {
    if (!this.text.startsWith(value)) return undefined;
    const map = this.map.slice(0, value.length);
    map.push(value.length < this.map.length ? this.map[value.length] : endOffset);
    return map;
  }
}

function scalarOffsetMap(source: string, scalar: Scalar, value: string): number[] | undefined {
  const range = scalar.range;
  if (range === null || range === undefined) return undefined;
  switch (scalar.type) {
    case Scalar.PLAIN:
      return readFlow(source, range[0], range[1], 'plain').mapFor(value, range[1]);
    case Scalar.QUOTE_SINGLE:
      return readFlow(source, range[0] + 1, range[1] - 1, 'single').mapFor(value, range[1] - 1);
    case Scalar.QUOTE_DOUBLE:
      return readFlow(source, range[0] + 1, range[1] - 1, 'double').mapFor(value, range[1] - 1);
    case Scalar.BLOCK_LITERAL:
    case Scalar.BLOCK_FOLDED:
      return readBlock(source, range[0], range[1], scalar.type === Scalar.BLOCK_FOLDED).mapFor(value, range[1]);
    default:
      return undefined;
  }
}

type FlowStyle = 'plain' | 'single' | 'double';

function readFlow(source: string, start: number, end: number, style: FlowStyle): Reading {
  const reading = new Reading();
  let at = start;
  while (at < end) {
    const ch = source[at];
    if (ch === '\n' || ch === '\r') {
      at = foldLineBreaks(source, at, reading);
    } else if (style === 'double' && ch === '\\') {
      at = readEscape(source, at, reading);
    } else if (style === 'single' && ch === "'" && source[at + 1] === "'") {
      reading.push("'", at);
      at += 2;
    } else {
      reading.push(ch, at);
      at++;
    }
  }
  return reading;
}

// Flow folding: trailing blanks go, one line break becomes a space, n breaks become n-1 newlines.
function foldLineBreaks(source: string, at: number, reading: Reading): number {
  while (reading.text.length > 0 && /[ \t]/.test(reading.text[reading.text.length - 1])) {
    const last = reading.map[reading.map.length - 1];
    if (source[last] !== reading.text[reading.text.length - 1]) break;
    reading.text = reading.text.slice(0, -1);
    reading.map.pop();
  }
  let breaks = 0;
  let cursor = at;
  for (;;) {
    const next = skipLineBreak(source, cursor);
    if (next === cursor) break;
    breaks++;
    cursor = skipBlanks(source, next);
  }
  reading.push(breaks === 1 ? ' ' : '\n'.repeat(breaks - 1), at);
  return cursor;
}

function skipLineBreak(source: string, at: number): number {
  if (source[at] === '\r' && source[at + 1] === '\n') return at + 2;
  return source[at] === '\n' || source[at] === '\r' ? at + 1 : at;
}

function skipBlanks(source: string, at: number): number {
  let cursor = at;
  while (source[cursor] === ' ' || source[cursor] === '\t') cursor++;
  return cursor;
}

function readEscape(source: string, at: number, reading: Reading): number {
  const kind = source[at + 1] ?? '';
  if (kind === '\n' || kind === '\r') return skipBlanks(source, skipLineBreak(source, at + 1));
  const hexLength = HEX_ESCAPE_LENGTH[kind];
  if (hexLength !== undefined) {
    const code = parseInt(source.slice(at + 2, at + 2 + hexLength), 16);
    reading.push(Number.isNaN(code) ? '' : String.fromCodePoint(code), at);
    return at + 2 + hexLength;
  }
  reading.push(DOUBLE_QUOTE_ESCAPES[kind] ?? kind, at);
  return at + 2;
}

function readBlock(source: string, start: number, end: number, folded: boolean): Reading {
  const reading = new Reading();
  const headerEnd = source.indexOf('\n', start);
  if (headerEnd < 0 || headerEnd >= end) return reading;
  const lines = splitLines(source, headerEnd + 1, end);
  const indent = contentIndent(source, lines);
  let previous: 'none' | 'normal' | 'indented' = 'none';
  let emptyRun = 0;
  for (const line of lines) {
    const contentStart = Math.min(line.start + indent, line.end);
    if (contentStart >= line.end || /^[ \t]*$/.test(source.slice(line.start, line.end))) {
      emptyRun++;
      continue;
    }
    const kind = source[contentStart] === ' ' || source[contentStart] === '\t' ? 'indented' : 'normal';
    if (previous !== 'none') joinLines(reading, folded, previous, kind, emptyRun, line.start - 1);
    else reading.push('\n'.repeat(emptyRun), line.start);
    for (let at = contentStart; at < line.end; at++) reading.push(source[at], at);
    previous = kind;
    emptyRun = 0;
  }
  reading.push('\n'.repeat(emptyRun + 1), lines.length > 0 ? lines[lines.length - 1].end : end);
  return reading;
}

function joinLines(reading: Reading, folded: boolean, previous: string, kind: string, emptyRun: number, at: number): void {
  if (!folded || previous === 'indented' || kind === 'indented') {
    reading.push('\n'.repeat(emptyRun + 1), at);
    return;
  }
  reading.push(emptyRun === 0 ? ' ' : '\n'.repeat(emptyRun), at);
}

function splitLines(source: string, start: number, end: number): { start: number; end: number }[] {
  const lines: { start: number; end: number }[] = [];
  let at = start;
  while (at < end) {
    const newline = source.indexOf('\n', at);
    const lineEnd = newline < 0 || newline > end ? end : newline;
    lines.push({ start: at, end: source[lineEnd - 1] === '\r' ? lineEnd - 1 : lineEnd });
    at = lineEnd + 1;
  }
  return lines;
}

function contentIndent(source: string, lines: readonly { start: number; end: number }[]): number {
  for (const line of lines) {
    const text = source.slice(line.start, line.end);
    if (!/^[ ]*$/.test(text)) return text.length - text.trimStart().length;
  }
  return 0;
}
