import { ConditionSyntaxError } from './errors';

export type TokenKind = 'word' | 'string' | 'number' | 'duration' | 'operator' | 'punct' | 'eof';

/** One lexical token; `text` is the exact source slice, `value` the decoded string or number. */
export interface Token {
  readonly kind: TokenKind;
  readonly text: string;
  readonly value: string | number;
  readonly start: number;
  readonly end: number;
}

const MAX_CONDITION_LENGTH = 16_384;
const WORD_START = /[A-Za-z_]/;
const WORD_CHAR = /[A-Za-z0-9_]/;
const DIGIT = /[0-9]/;
const NUMBER_AT = /-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const WORD_AT = /[A-Za-z_][A-Za-z0-9_]*/y;
const PUNCTUATION = new Set(['(', ')', '[', ']', ',', '.']);
const ESCAPES: Readonly<Record<string, string>> = { '\\': '\\', '"': '"', "'": "'", n: '\n', t: '\t' };

// Symbols people bring from other languages; the hint says what to write instead.
const SYMBOL_HINTS: Readonly<Record<string, string>> = {
  '&': "unexpected '&': write 'and'",
  '|': "unexpected '|': write 'or'",
  '!': "unexpected '!': write 'not' or '!='",
  '=': "unexpected '=': write '==' to compare",
};

/** Splits a condition into tokens, ending with an `eof` token; throws ConditionSyntaxError. */
export function tokenize(text: string): Token[] {
  if (text.length > MAX_CONDITION_LENGTH) {
    throw new ConditionSyntaxError(`condition longer than ${MAX_CONDITION_LENGTH} characters`, text, MAX_CONDITION_LENGTH);
  }
  const tokens: Token[] = [];
  let offset = skipSpace(text, 0);
  while (offset < text.length) {
    const token = readToken(text, offset);
    tokens.push(token);
    offset = skipSpace(text, token.end);
  }
  tokens.push({ kind: 'eof', text: '', value: '', start: text.length, end: text.length });
  return tokens;
}

function skipSpace(text: string, offset: number): number {
  let at = offset;
  while (at < text.length && isSpace(text[at])) at++;
  return at;
}

function isSpace(ch: string): boolean {
  return ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r';
}

function readToken(text: string, offset: number): Token {
  const ch = text[offset];
  if (ch === '"' || ch === "'") return readString(text, offset);
  if (DIGIT.test(ch) || (ch === '-' && DIGIT.test(text[offset + 1] ?? ''))) return readNumber(text, offset);
  if (WORD_START.test(ch)) return readWord(text, offset);
  if (PUNCTUATION.has(ch)) return { kind: 'punct', text: ch, value: ch, start: offset, end: offset + 1 };
  return readOperator(text, offset);
}

function readWord(text: string, offset: number): Token {
  WORD_AT.lastIndex = offset;
  const word = WORD_AT.exec(text)?.[0] ?? text[offset];
  return { kind: 'word', text: word, value: word, start: offset, end: offset + word.length };
}

// A number directly followed by letters is a duration such as `30s`; its unit is checked later.
function readNumber(text: string, offset: number): Token {
  NUMBER_AT.lastIndex = offset;
  const numeral = NUMBER_AT.exec(text)?.[0] ?? text[offset];
  let end = offset + numeral.length;
  if (end < text.length && WORD_START.test(text[end])) {
    while (end < text.length && WORD_CHAR.test(text[end])) end++;
    const slice = text.slice(offset, end);
    return { kind: 'duration', text: slice, value: slice, start: offset, end };
  }
  return { kind: 'number', text: numeral, value: Number(numeral), start: offset, end };
}

function readString(text: string, offset: number): Token {
  const quote = text[offset];
  let value = '';
  let at = offset + 1;
  while (at < text.length && text[at] !== quote) {
    if (text[at] === '\\') {
      const decoded = ESCAPES[text[at + 1] ?? ''];
      if (decoded === undefined) {
        throw new ConditionSyntaxError(
          'unknown escape in string: only \\\\ \\" \\\' \\n \\t are allowed',
          text,
          at,
        );
      }
      value += decoded;
      at += 2;
    } else {
      value += text[at];
      at++;
    }
  }
  if (at >= text.length) throw new ConditionSyntaxError('unterminated string', text, offset);
  return { kind: 'string', text: text.slice(offset, at + 1), value, start: offset, end: at + 1 };
}

function readOperator(text: string, offset: number): Token {
  const two = text.slice(offset, offset + 2);
  if (two === '==' || two === '!=' || two === '<=' || two === '>=') {
    return { kind: 'operator', text: two, value: two, start: offset, end: offset + 2 };
  }
  const ch = text[offset];
  if (ch === '<' || ch === '>') return { kind: 'operator', text: ch, value: ch, start: offset, end: offset + 1 };
  const hint = SYMBOL_HINTS[ch];
  throw new ConditionSyntaxError(hint ?? `unexpected character ${JSON.stringify(ch)}`, text, offset);
}
