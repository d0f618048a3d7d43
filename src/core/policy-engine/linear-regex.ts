/**
 * `matches` patterns, matched by RE2 (the re2js port): time linear in the argument's length
 * whatever the pattern, so no argument can stall the gateway the way a backtracking engine can.
 *
 * Patterns keep the JavaScript syntax and meaning users wrote them in (docs/policies.md, "Regular
 * expressions"): before RE2 compiles a pattern, the few constructs whose meaning differs are
 * rewritten to RE2 forms with the JavaScript meaning (`.`, `\s`, `\S`, `\uXXXX`, `\cX`, `\0`,
 * `[]`, `[^]`, `[\b]`, a `[` inside a class). What RE2 cannot match in linear time
 * (backreferences, lookaround) is refused with its offset in the pattern.
 */
import { RE2JS, RE2JSSyntaxException } from 're2js';

/** Longest pattern accepted, in UTF-16 code units. */
export const MAX_PATTERN_LENGTH = 256;
/**
 * Largest compiled program accepted, in RE2 instructions. Matching takes time linear in the
 * argument, but in the worst case also proportional to the program: up to about this many steps
 * per character when RE2's DFA gives up on a pattern such as `a[ab]{490}$` (about 0.5 s for
 * 3,000 characters, 1 to 2 s for 64 KiB, in this engine). Ordinary patterns need well under 100.
 */
export const MAX_PROGRAM_SIZE = 500;

/** A compiled pattern; `test` searches anywhere in the subject, as `RegExp.prototype.test`. */
export interface LinearRegex {
  test(subject: string): boolean;
}

/** A compiled pattern, or why it was refused and where: a 0-based offset into the pattern, null for the whole pattern. */
export type LinearRegexResult = { ok: true; regex: LinearRegex } | { ok: false; reason: string; offset: number | null };

/** Compiles a `matches` pattern for RE2, keeping its JavaScript meaning; refuses what RE2 cannot match. */
export function compileLinearRegex(pattern: string): LinearRegexResult {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    return { ok: false, reason: `regular expression longer than ${MAX_PATTERN_LENGTH} characters`, offset: null };
  }
  const translated = translatePattern(pattern);
  if (!translated.ok) return translated;
  let regex: RE2JS;
  try {
    regex = RE2JS.compile(translated.pieces.map((piece) => piece.text).join(''));
  } catch (error) {
    if (!(error instanceof RE2JSSyntaxException)) throw error;
    return { ok: false, reason: `${error.error}${fragmentText(error.input)}`, offset: fragmentOffset(translated.pieces, error.input) };
  }
  const size = regex.programSize();
  if (size > MAX_PROGRAM_SIZE) {
    return {
      ok: false,
      reason: `regular expression compiles to ${size} RE2 instructions, more than ${MAX_PROGRAM_SIZE}: lower its repetition counts`,
      offset: null,
    };
  }
  return { ok: true, regex };
}

/** A run of RE2 syntax and the offset in the user's pattern it was written from. */
interface Piece {
  readonly text: string;
  readonly at: number;
}

type Translation = { ok: true; pieces: Piece[] } | { ok: false; reason: string; offset: number };

class Refusal extends Error {
  constructor(
    readonly reason: string,
    readonly offset: number,
  ) {
    super(reason);
  }
}

const NO_LINEAR_MATCH = 'RE2 matches in linear time and has no';
/** JavaScript's `.` without the s flag: anything but a line terminator. */
const ANY_BUT_LINE_TERMINATOR = '[^\\n\\r\\x{2028}\\x{2029}]';
const ANY_CHARACTER = '[\\x{0}-\\x{10FFFF}]';
const NO_CHARACTER = '[^\\x{0}-\\x{10FFFF}]';
/** JavaScript's `\s`: WhiteSpace and LineTerminator of ECMA-262, as [from, to] code points. */
const JS_SPACE: ReadonlyArray<readonly [number, number]> = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
const JS_SPACE_ITEMS = classItems(JS_SPACE);
const JS_NON_SPACE_ITEMS = classItems(complement(JS_SPACE));

/** The pattern in RE2 syntax with its JavaScript meaning, piece by piece, or the first construct RE2 cannot match. */
function translatePattern(pattern: string): Translation {
  try {
    return { ok: true, pieces: new PatternTranslator(pattern).translate() };
  } catch (error) {
    if (error instanceof Refusal) return { ok: false, reason: error.reason, offset: error.offset };
    throw error;
  }
}

class PatternTranslator {
  private readonly pieces: Piece[] = [];
  private at = 0;
  private inClass = false;

  constructor(private readonly pattern: string) {}

  translate(): Piece[] {
    while (this.at < this.pattern.length) {
      if (this.inClass) this.classItem();
      else this.outsideItem();
    }
    return this.pieces;
  }

  private emit(text: string, at: number, next: number): void {
    this.pieces.push({ text, at });
    this.at = next;
  }

  private outsideItem(): void {
    const start = this.at;
    const ch = this.pattern[start];
    if (ch === '\\') return this.escape(false);
    if (ch === '.') return this.emit(ANY_BUT_LINE_TERMINATOR, start, start + 1);
    if (ch === '(') return this.group();
    if (ch !== '[') return this.emit(ch, start, start + 1);
    const rest = this.pattern.slice(start, start + 3);
    // JavaScript's `[]` matches nothing and `[^]` anything; RE2 reads a leading `]` as a member.
    if (rest.startsWith('[]')) return this.emit(NO_CHARACTER, start, start + 2);
    if (rest === '[^]') return this.emit(ANY_CHARACTER, start, start + 3);
    this.inClass = true;
    if (rest.startsWith('[^')) return this.emit('[^', start, start + 2);
    this.emit('[', start, start + 1);
  }

  private classItem(): void {
    const start = this.at;
    const ch = this.pattern[start];
    if (ch === '\\') return this.escape(true);
    if (ch === ']') this.inClass = false;
    // A `[` in a JavaScript class is a plain member; RE2 would read `[:alpha:]` as a POSIX class.
    this.emit(ch === '[' ? '\\[' : ch, start, start + 1);
  }

  private group(): void {
    const start = this.at;
    const rest = this.pattern.slice(start, start + 4);
    const lookaround = /^\(\?(<?[=!])/.exec(rest);
    if (lookaround !== null) {
      throw new Refusal(`lookaround (?${lookaround[1]} at offset ${start} is not supported: ${NO_LINEAR_MATCH} lookahead or lookbehind`, start);
    }
    // `.` is rewritten to JavaScript's meaning above, so RE2's s flag could not change it.
    if (/^\(\?[a-zA-Z-]*s[a-zA-Z-]*[:)]/.test(this.pattern.slice(start, start + 12))) {
      throw new Refusal(`the s flag at offset ${start} is not supported: write [\\s\\S] for any character`, start);
    }
    this.emit('(', start, start + 1);
  }

  private escape(inClass: boolean): void {
    const start = this.at;
    const kind = this.pattern[start + 1];
    if (kind === undefined) throw new Refusal('\\ at end of pattern', start);
    if (/[1-9]/.test(kind)) {
      throw new Refusal(`backreference \\${kind} at offset ${start} is not supported: ${NO_LINEAR_MATCH} backreferences`, start);
    }
    if (kind === 'k' && this.pattern[start + 2] === '<') {
      throw new Refusal(`backreference \\k<…> at offset ${start} is not supported: ${NO_LINEAR_MATCH} backreferences`, start);
    }
    if (kind === 's' || kind === 'S') return this.spaceEscape(kind === 'S', inClass);
    if (kind === 'u') return this.unicodeEscape();
    if (kind === 'c' && /[A-Za-z]/.test(this.pattern[start + 2] ?? '')) {
      return this.emit(codePointEscape(this.pattern.charCodeAt(start + 2) % 32), start, start + 3);
    }
    if (kind === '0') {
      if (/[0-9]/.test(this.pattern[start + 2] ?? '')) throw new Refusal(`octal escape at offset ${start} is not supported: write \\x{…}`, start);
      return this.emit('\\x{0}', start, start + 2);
    }
    if (kind === 'b' && inClass) return this.emit('\\x{8}', start, start + 2);
    if (kind === 'Q') return this.quoted();
    // `\d \D \w \W \b \B \t \n \v \f \r \xHH` and escaped punctuation mean the same to RE2 (ASCII
    // classes and word boundaries in both); any other letter is RE2 syntax (`\A`, `\z`, `\p{…}`)
    // or refused by RE2 with its reason.
    this.emit(`\\${kind}`, start, start + 2);
  }

  private spaceEscape(negated: boolean, inClass: boolean): void {
    const start = this.at;
    const items = negated ? JS_NON_SPACE_ITEMS : JS_SPACE_ITEMS;
    this.emit(inClass ? items : `[${items}]`, start, start + 2);
  }

  /** `\uXXXX`; a surrogate pair written as two escapes is one character, as in JavaScript strings. */
  private unicodeEscape(): void {
    const start = this.at;
    const unit = hexUnit(this.pattern, start);
    if (unit === undefined) throw new Refusal(`\\u at offset ${start} needs four hex digits`, start);
    const low = isHighSurrogate(unit) && !this.inClass ? hexUnit(this.pattern, start + 6) : undefined;
    if (low !== undefined && isLowSurrogate(low)) {
      return this.emit(codePointEscape(0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00)), start, start + 12);
    }
    this.emit(codePointEscape(unit), start, start + 6);
  }

  /** `\Q…\E` quotes literally in RE2; copied whole so nothing inside is rewritten. */
  private quoted(): void {
    const start = this.at;
    const end = this.pattern.indexOf('\\E', start + 2);
    const next = end < 0 ? this.pattern.length : end + 2;
    this.emit(this.pattern.slice(start, next), start, next);
  }
}

function hexUnit(pattern: string, at: number): number | undefined {
  if (pattern[at] !== '\\' || pattern[at + 1] !== 'u') return undefined;
  const digits = pattern.slice(at + 2, at + 6);
  return /^[0-9a-fA-F]{4}$/.test(digits) ? parseInt(digits, 16) : undefined;
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

function codePointEscape(codePoint: number): string {
  return `\\x{${codePoint.toString(16)}}`;
}

function classItems(ranges: ReadonlyArray<readonly [number, number]>): string {
  return ranges.map(([from, to]) => (from === to ? codePointEscape(from) : `${codePointEscape(from)}-${codePointEscape(to)}`)).join('');
}

function complement(ranges: ReadonlyArray<readonly [number, number]>): Array<[number, number]> {
  const result: Array<[number, number]> = [];
  let next = 0;
  for (const [from, to] of ranges) {
    if (from > next) result.push([next, from - 1]);
    next = to + 1;
  }
  result.push([next, 0x10ffff]);
  return result;
}

function fragmentText(fragment: string | null): string {
  return fragment === null || fragment === '' ? '' : `: \`${fragment}\``;
}

/** Where RE2's quoted fragment starts in the user's pattern; null when it cannot be told. */
function fragmentOffset(pieces: readonly Piece[], fragment: string | null): number | null {
  if (fragment === null || fragment === '') return null;
  const text = pieces.map((piece) => piece.text).join('');
  const found = text.indexOf(fragment);
  if (found < 0) return null;
  let position = 0;
  for (const piece of pieces) {
    if (position + piece.text.length > found) return piece.at;
    position += piece.text.length;
  }
  return null;
}
