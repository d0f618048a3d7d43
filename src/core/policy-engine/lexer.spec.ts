import { ConditionSyntaxError } from './errors';
import { tokenize } from './lexer';

function kinds(text: string): [string, string | number][] {
  return tokenize(text).map((token) => [token.kind, token.value]);
}

describe('tokenize', () => {
  it.each<[string, [string, string | number][]]>([
    ['args.path', [['word', 'args'], ['punct', '.'], ['word', 'path'], ['eof', '']]],
    ['a == b', [['word', 'a'], ['operator', '=='], ['word', 'b'], ['eof', '']]],
    ['!= <= >= < >', [['operator', '!='], ['operator', '<='], ['operator', '>='], ['operator', '<'], ['operator', '>'], ['eof', '']]],
    ['"a\\"b"', [['string', 'a"b'], ['eof', '']]],
    ["'it\\'s'", [['string', "it's"], ['eof', '']]],
    ['"\\\\ \\n \\t"', [['string', '\\ \n \t'], ['eof', '']]],
    ["'say \"hi\"'", [['string', 'say "hi"'], ['eof', '']]],
    ['42 -7 3.25 -0.5 1e3 2E-2', [['number', 42], ['number', -7], ['number', 3.25], ['number', -0.5], ['number', 1000], ['number', 0.02], ['eof', '']]],
    ['30s 1m 10kb', [['duration', '30s'], ['duration', '1m'], ['duration', '10kb'], ['eof', '']]],
    ['( ) [ ] ,', [['punct', '('], ['punct', ')'], ['punct', '['], ['punct', ']'], ['punct', ','], ['eof', '']]],
    ['  \n\t', [['eof', '']]],
  ])('%j', (text, expected) => {
    expect(kinds(text)).toEqual(expected);
  });

  it('records token offsets', () => {
    expect(tokenize('a  ==  "x"').map((token) => [token.start, token.end])).toEqual([
      [0, 1],
      [3, 5],
      [7, 10],
      [10, 10],
    ]);
  });

  it.each([
    ['a && b', 2, "unexpected '&': write 'and'"],
    ['a || b', 2, "unexpected '|': write 'or'"],
    ['!a', 0, "unexpected '!': write 'not' or '!='"],
    ['a = 1', 2, "unexpected '=': write '==' to compare"],
    ['a - 1', 2, 'unexpected character "-"'],
    ['a @ b', 2, 'unexpected character "@"'],
    ['"abc', 0, 'unterminated string'],
    ["x == 'abc", 5, 'unterminated string'],
    ['"a\\qb"', 2, 'unknown escape in string: only \\\\ \\" \\\' \\n \\t are allowed'],
  ])('%j fails at %d: %s', (text, offset, message) => {
    const error = catchError(() => tokenize(text));
    expect(error).toBeInstanceOf(ConditionSyntaxError);
    expect(error).toMatchObject({ offset, message, line: 1, column: offset + 1 });
  });

  it('reports line and column on later lines', () => {
    const error = catchError(() => tokenize('a == 1 and\n  b # 2'));
    expect(error).toMatchObject({ offset: 15, line: 2, column: 5 });
  });

  it('rejects over-long conditions', () => {
    expect(() => tokenize('a'.repeat(20_000))).toThrow('condition longer than 16384 characters');
  });
});

function catchError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}
