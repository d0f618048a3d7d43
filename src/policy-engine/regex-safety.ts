/**
 * Load-time screening of `matches` patterns. JavaScript's regex engine backtracks, so a pattern
 * that can match the same text in many ways can take exponential time on a hostile argument.
 * We parse the pattern into a small tree and reject the shapes that cause that.
 */

export const MAX_PATTERN_LENGTH = 256;
const MAX_REPEAT_BOUND = 1000;

/** A screened, compiled pattern, or the reason it was rejected. */
export type SafeRegexResult = { ok: true; regex: RegExp } | { ok: false; reason: string };

/** Compiles a pattern after rejecting backreferences, lookarounds, nested or ambiguous repetition, and long patterns. */
export function compileSafeRegex(pattern: string): SafeRegexResult {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    return { ok: false, reason: `regular expression longer than ${MAX_PATTERN_LENGTH} characters` };
  }
  let regex: RegExp;
  try {
    regex = new RegExp(pattern);
  } catch (error) {
    return { ok: false, reason: `invalid regular expression: ${(error as Error).message}` };
  }
  const reason = regexHazard(pattern);
  return reason === undefined ? { ok: true, regex } : { ok: false, reason };
}

/** Why a syntactically valid pattern could backtrack catastrophically, else undefined. */
export function regexHazard(pattern: string): string | undefined {
  try {
    const tree = new PatternParser(pattern).parse();
    checkRepetition(tree, false);
    return undefined;
  } catch (error) {
    if (error instanceof UnsafePattern) return error.message;
    throw error;
  }
}

class UnsafePattern extends Error {}

interface CharAtom {
  readonly kind: 'chars';
  readonly source: string;
  readonly samples: readonly number[];
}

interface GroupAtom {
  readonly kind: 'group';
  readonly offset: number;
  readonly alternatives: readonly Term[][];
}

interface AssertionAtom {
  readonly kind: 'assertion';
}

type Atom = CharAtom | GroupAtom | AssertionAtom;

interface Term {
  readonly atom: Atom;
  readonly min: number;
  readonly max: number;
}

class PatternParser {
  private at = 0;

  constructor(private readonly pattern: string) {}

  parse(): Term[][] {
    return this.alternatives();
  }

  private alternatives(): Term[][] {
    const result: Term[][] = [this.sequence()];
    while (this.pattern[this.at] === '|') {
      this.at++;
      result.push(this.sequence());
    }
    return result;
  }

  private sequence(): Term[] {
    const terms: Term[] = [];
    while (this.at < this.pattern.length && this.pattern[this.at] !== '|' && this.pattern[this.at] !== ')') {
      const atom = this.atom();
      terms.push(this.quantified(atom));
    }
    return terms;
  }

  private atom(): Atom {
    const start = this.at;
    const ch = this.pattern[this.at];
    if (ch === '(') return this.group();
    if (ch === '^' || ch === '$') {
      this.at++;
      return { kind: 'assertion' };
    }
    if (ch === '[') return this.charClass();
    if (ch === '\\') return this.escape();
    this.at++;
    return { kind: 'chars', source: this.pattern.slice(start, this.at), samples: ch === '.' ? [] : [ch.charCodeAt(0)] };
  }

  private group(): Atom {
    const offset = this.at;
    const rest = this.pattern.slice(this.at, this.at + 4);
    if (/^\(\?<?[=!]/.test(rest)) {
      throw new UnsafePattern(`lookaround assertions ((?=, (?!, (?<=, (?<!) are not allowed (at offset ${offset})`);
    }
    if (rest.startsWith('(?:')) this.at += 3;
    else if (rest.startsWith('(?<')) this.at = this.pattern.indexOf('>', this.at) + 1;
    else this.at++;
    const alternatives = this.alternatives();
    this.at++; // the closing parenthesis; the RegExp constructor already checked balance
    return { kind: 'group', offset, alternatives };
  }

  private escape(): Atom {
    const start = this.at;
    const next = this.pattern[this.at + 1] ?? '';
    if (/[1-9]/.test(next) || (next === 'k' && this.pattern[this.at + 2] === '<')) {
      throw new UnsafePattern(`backreferences (\\1, \\k<name>) are not allowed (at offset ${start})`);
    }
    if (next === 'b' || next === 'B') {
      this.at += 2;
      return { kind: 'assertion' };
    }
    this.at += escapeLength(this.pattern, start);
    const source = this.pattern.slice(start, this.at);
    const decoded = decodeEscape(source);
    return { kind: 'chars', source, samples: decoded === undefined ? [] : [decoded] };
  }

  private charClass(): Atom {
    const start = this.at;
    const samples: number[] = [];
    this.at++;
    if (this.pattern[this.at] === '^') this.at++;
    // A `]` right after `[` closes an empty class in JavaScript, so no special case here.
    while (this.at < this.pattern.length && this.pattern[this.at] !== ']') {
      const itemStart = this.at;
      this.at += this.pattern[this.at] === '\\' ? escapeLength(this.pattern, this.at) : 1;
      const code = decodeEscape(this.pattern.slice(itemStart, this.at));
      if (code !== undefined) samples.push(code - 1, code, code + 1);
    }
    this.at++;
    return { kind: 'chars', source: this.pattern.slice(start, this.at), samples };
  }

  private quantified(atom: Atom): Term {
    const rest = this.pattern.slice(this.at);
    const simple = /^[*+?]/.exec(rest);
    const braces = /^\{(\d+)(,(\d*))?\}/.exec(rest);
    let min = 1;
    let max = 1;
    if (simple !== null) {
      min = simple[0] === '+' ? 1 : 0;
      max = simple[0] === '?' ? 1 : Infinity;
      this.at++;
    } else if (braces !== null) {
      min = Number(braces[1]);
      max = braces[2] === undefined ? min : braces[3] === '' ? Infinity : Number(braces[3]);
      this.checkBound(braces[0], Math.max(min, max === Infinity ? 0 : max));
      this.at += braces[0].length;
    } else {
      return { atom, min, max };
    }
    if (this.pattern[this.at] === '?') this.at++;
    return { atom, min, max };
  }

  private checkBound(text: string, bound: number): void {
    if (bound > MAX_REPEAT_BOUND) {
      throw new UnsafePattern(`repetition bound ${text} exceeds ${MAX_REPEAT_BOUND}`);
    }
  }
}

function escapeLength(pattern: string, at: number): number {
  const next = pattern[at + 1] ?? '';
  if (next === 'x' && /^[0-9a-fA-F]{2}$/.test(pattern.slice(at + 2, at + 4))) return 4;
  if (next === 'u' && /^[0-9a-fA-F]{4}$/.test(pattern.slice(at + 2, at + 6))) return 6;
  if (next === 'c' && /^[A-Za-z]$/.test(pattern[at + 2] ?? '')) return 3;
  return 2;
}

const CONTROL_ESCAPES: Readonly<Record<string, number>> = { t: 9, n: 10, v: 11, f: 12, r: 13, '0': 0 };
const CLASS_ESCAPES = new Set(['d', 'D', 'w', 'W', 's', 'S']);

function decodeEscape(source: string): number | undefined {
  if (source[0] !== '\\') return source.charCodeAt(0);
  const kind = source[1] ?? '';
  if (CLASS_ESCAPES.has(kind)) return undefined;
  if (kind === 'x' || kind === 'u') return source.length > 2 ? parseInt(source.slice(2), 16) : kind.charCodeAt(0);
  if (kind === 'c' && source.length === 3) return source.charCodeAt(2) % 32;
  return CONTROL_ESCAPES[kind] ?? kind.charCodeAt(0);
}

function checkRepetition(alternatives: readonly Term[][], insideRepeat: boolean): void {
  for (const sequence of alternatives) {
    for (const term of sequence) checkTerm(term, insideRepeat);
  }
}

function checkTerm(term: Term, insideRepeat: boolean): void {
  if (insideRepeat && term.min !== term.max) {
    throw new UnsafePattern(
      'nested quantifier: a repeated group contains a variably repeated element, as in (a+)+ or (a*)*, ' +
        'which can backtrack catastrophically',
    );
  }
  if (term.atom.kind !== 'group') return;
  const repeated = insideRepeat || term.max > 1;
  checkRepetition(term.atom.alternatives, repeated);
  if (repeated) checkGroupAmbiguity(term.atom);
}

function checkGroupAmbiguity(group: GroupAtom): void {
  const firsts = group.alternatives.map(firstOfSequence);
  if (firsts.some((first) => first.nullable)) {
    throw new UnsafePattern(`the repeated group at offset ${group.offset} can match the empty string`);
  }
  for (let i = 0; i < firsts.length; i++) {
    for (let j = i + 1; j < firsts.length; j++) {
      if (setsOverlap(firsts[i].atoms, firsts[j].atoms)) {
        throw new UnsafePattern(
          `alternatives of the repeated group at offset ${group.offset} can start with the same character, ` +
            'as in (a|ab)*, which can backtrack catastrophically',
        );
      }
    }
  }
}

interface FirstSet {
  readonly atoms: CharAtom[];
  readonly nullable: boolean;
}

function firstOfSequence(sequence: readonly Term[]): FirstSet {
  const atoms: CharAtom[] = [];
  for (const term of sequence) {
    const first = firstOfAtom(term.atom);
    atoms.push(...first.atoms);
    if (!first.nullable && term.min > 0) return { atoms, nullable: false };
  }
  return { atoms, nullable: true };
}

function firstOfAtom(atom: Atom): FirstSet {
  if (atom.kind === 'chars') return { atoms: [atom], nullable: false };
  if (atom.kind === 'assertion') return { atoms: [], nullable: true };
  const firsts = atom.alternatives.map(firstOfSequence);
  return { atoms: firsts.flatMap((first) => first.atoms), nullable: firsts.some((first) => first.nullable) };
}

// Characters every overlap test tries: Latin-1 plus the Unicode spaces that \s matches.
const BASE_SAMPLES: readonly number[] = [
  ...Array.from({ length: 256 }, (_, code) => code),
  0x1680, 0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff, 0x4e00, 0xffff,
];

const atomMatchers = new WeakMap<CharAtom, RegExp>();

function setsOverlap(left: readonly CharAtom[], right: readonly CharAtom[]): boolean {
  return left.some((a) => right.some((b) => atomsOverlap(a, b)));
}

function atomsOverlap(a: CharAtom, b: CharAtom): boolean {
  const candidates = [...a.samples, ...b.samples, ...BASE_SAMPLES];
  const matchA = matcherOf(a);
  const matchB = matcherOf(b);
  return candidates.some((code) => {
    if (code < 0 || code > 0xffff) return false;
    const ch = String.fromCharCode(code);
    return matchA.test(ch) && matchB.test(ch);
  });
}

function matcherOf(atom: CharAtom): RegExp {
  let matcher = atomMatchers.get(atom);
  if (matcher === undefined) {
    matcher = new RegExp(`^(?:${atom.source})$`);
    atomMatchers.set(atom, matcher);
  }
  return matcher;
}
