import { compileLinearRegex, MAX_PATTERN_LENGTH, MAX_PROGRAM_SIZE } from './linear-regex';

function compiled(pattern: string) {
  const result = compileLinearRegex(pattern);
  if (!result.ok) throw new Error(`refused ${pattern}: ${result.reason}`);
  return result.regex;
}

/** Subjects that tell the two engines' classes apart: line terminators, JavaScript's spaces, surrogates. */
const SUBJECTS = [
  '',
  'a',
  'abc',
  'ABC',
  'a\nb',
  'a\rb',
  'a\u2028b',
  ' \t\v\f\u00a0\u1680\u2000\u200a\u202f\u205f\u3000\ufeff',
  'x\u000by',
  'x\u00a0y',
  'x\u0085y',
  'x\u200by',
  '\u0000',
  '\u0001',
  '\b',
  '[',
  ']',
  ':alpha:',
  'A',
  'user@example.com',
  '/home/alice/.ssh/id_rsa',
  '  DROP TABLE x',
  '\u000bDROP TABLE x',
  'rm -rf /',
  'a.b',
  '\ud800',
  'é',
  '中文',
];

/** JavaScript patterns whose meaning must not change with the engine. */
const SAME_MEANING = [
  '^/home/[a-z]+/\\.ssh/',
  '^\\s*(DROP|TRUNCATE)\\b',
  '^(rm|dd|mkfs)\\s',
  '.',
  '^.$',
  '^a.b$',
  '\\s',
  '\\S',
  '^\\s+$',
  '^\\S+$',
  '[\\s]',
  '[^\\s]',
  '[\\S]',
  '[^\\S]',
  '[\\s\\d]',
  '[a\\S]',
  '\\d',
  '\\w+',
  '\\W',
  '\\bx',
  '\\Bb',
  '[\\b]',
  '[]',
  '[^]',
  '^[^]$',
  'a[]',
  '[[]',
  '[[:alpha:]]',
  '\\u0041',
  '\\u00e9',
  '\\u4e2d',
  '[\\u4e00-\\u9fff]+',
  '\\x41',
  '\\cA',
  '\\0',
  '\\v',
  '^$',
  'a$',
  '^A',
  'a{,3}',
  'a{2}',
  '(a|b)+',
  '(?:ab|cd)*',
  '(?<word>[a-z]+)',
  '.*@.*\\..*',
  '\\.',
  '\\/',
  '\\-',
  '[\\-a]',
  '[\\]]',
  'a|',
];

describe('compileLinearRegex: the JavaScript meaning is kept', () => {
  it.each(SAME_MEANING)('%s decides every subject as RegExp does', (pattern) => {
    const native = new RegExp(pattern);
    const linear = compiled(pattern);
    for (const subject of SUBJECTS) expect([subject, linear.test(subject)]).toEqual([subject, native.test(subject)]);
  });

  it('searches anywhere in the subject unless anchored, and is case-sensitive', () => {
    expect(compiled('ssh').test('/home/a/.ssh/key')).toBe(true);
    expect(compiled('^ssh').test('/home/a/.ssh/key')).toBe(false);
    expect(compiled('key$').test('/home/a/.ssh/key\n')).toBe(false);
    expect(compiled('^get$').test('GET')).toBe(false);
  });

  it('is stateless: the same subject matches every time', () => {
    const regex = compiled('a');
    expect([regex.test('a'), regex.test('a'), regex.test('a')]).toEqual([true, true, true]);
  });

  it('counts a character outside the Basic Multilingual Plane as one character', () => {
    expect(compiled('^.$').test('\u{1F600}')).toBe(true);
    expect(compiled('^\\ud83d\\ude00$').test('\u{1F600}')).toBe(true);
  });

  it('takes the RE2 additions: case-insensitive groups, Unicode classes', () => {
    expect(compiled('(?i)^drop').test('DrOp table')).toBe(true);
    expect(compiled('^\\p{L}+$').test('Grüße')).toBe(true);
  });
});

describe('compileLinearRegex: linear time', () => {
  it.each([
    ['.*@.*\\..*', 'a'.repeat(100_000)],
    ['a*a*b', 'a'.repeat(100_000)],
    ['\\s+$', `${' '.repeat(100_000)}x`],
    ['(a+)+$', `${'a'.repeat(100_000)}!`],
    ['(a|ab)*c', 'ab'.repeat(50_000)],
    ['^(\\w+\\s?)*$', `${'word '.repeat(20_000)}!`],
  ])('%s against a hostile 100,000-character argument answers at once', (pattern, subject) => {
    const regex = compiled(pattern);
    const started = process.hrtime.bigint();
    expect(regex.test(subject)).toBe(false);
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(1000);
  });
});

describe('compileLinearRegex: refusals', () => {
  it.each<[string, string, number | null]>([
    ['(a)\\1', 'backreference \\1 at offset 3 is not supported: RE2 matches in linear time and has no backreferences', 3],
    ['(?<x>a)\\k<x>', 'backreference \\k<…> at offset 7 is not supported', 7],
    ['[\\1]', 'backreference \\1 at offset 1', 1],
    ['a(?=b)', 'lookaround (?= at offset 1 is not supported: RE2 matches in linear time and has no lookahead or lookbehind', 1],
    ['(?!a)b', 'lookaround (?! at offset 0', 0],
    ['x(?<=a)b', 'lookaround (?<= at offset 1', 1],
    ['(?<!a)b', 'lookaround (?<! at offset 0', 0],
    ['(?s).', 'the s flag at offset 0 is not supported: write [\\s\\S] for any character', 0],
    ['a(?is:b)', 'the s flag at offset 1', 1],
    ['\\01', 'octal escape at offset 0 is not supported', 0],
    ['\\u12', '\\u at offset 0 needs four hex digits', 0],
    ['ab\\', '\\ at end of pattern', 2],
    ['(x', 'missing closing ): `(x`', 0],
    ['x\\e', 'invalid escape sequence: `\\e`', 1],
    ['a**', 'invalid nested repetition operator: `**`', 1],
    ['a{1,5000}', 'invalid repeat count: `{1,5000}`', 1],
    ['a'.repeat(MAX_PATTERN_LENGTH + 1), `regular expression longer than ${MAX_PATTERN_LENGTH} characters`, null],
    ['^[a-z]{1000}$', `compiles to 1004 RE2 instructions, more than ${MAX_PROGRAM_SIZE}: lower its repetition counts`, null],
  ])('%s', (pattern, reason, offset) => {
    const result = compileLinearRegex(pattern);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.reason).toContain(reason);
    expect(result.offset).toBe(offset);
  });

  it('accepts a pattern of exactly the length bound, and repetitions up to the program size', () => {
    expect(compileLinearRegex('a'.repeat(MAX_PATTERN_LENGTH)).ok).toBe(true);
    expect(compileLinearRegex('^[a-z0-9-]{1,63}(\\.[a-z0-9-]{1,63})*$').ok).toBe(true);
    expect(compileLinearRegex('^[a-z]{490}$').ok).toBe(true);
    expect(compileLinearRegex('^[a-z]{500}$').ok).toBe(false);
  });
});
