import { compileSafeRegex, regexHazard } from './regex-safety';

describe('compileSafeRegex', () => {
  it.each([
    '^/api/v[0-9]+/users/[a-z0-9-]+$',
    '^(GET|POST|PUT)$',
    '^[^@]+@example\\.com$',
    '^\\s*(DROP|TRUNCATE)\\b',
    '(\\d{3}-)+\\d{4}',
    '^(a|b)+$',
    '(?:ab|cd)*',
    '(?<word>[a-z]+)',
    '.*\\.json$',
    '[\\w.-]+',
    'a{2,5}',
    '(x{3})*',
    '[]',
    '\\u0041(\\x42|c)*',
  ])('accepts %s', (pattern) => {
    const result = compileSafeRegex(pattern);
    expect(result.ok).toBe(true);
  });

  it.each([
    ['(a+)+', 'nested quantifier'],
    ['(a*)*', 'nested quantifier'],
    ['(a?a)*', 'nested quantifier'],
    ['((ab)+c)*', 'nested quantifier'],
    ['(?:\\w+\\.)+com', 'nested quantifier'],
    ['(a{1,3}){2}', 'nested quantifier'],
    ['(a|ab)*', 'alternatives of the repeated group at offset 0 can start with the same character'],
    ['x(a|a)+', 'alternatives of the repeated group at offset 1 can start with the same character'],
    ['(\\d|[0-5])+', 'can start with the same character'],
    ['(.|a)*', 'can start with the same character'],
    ['([a-f]|[e-z])+', 'can start with the same character'],
    ['((a|ab)c)*', 'can start with the same character'],
    ['(a|)*', 'can match the empty string'],
    ['(^)*', 'can match the empty string'],
    ['(a)\\1', 'backreferences (\\1, \\k<name>) are not allowed (at offset 3)'],
    ['(?<x>a)\\k<x>', 'backreferences'],
    ['a(?=b)', 'lookaround assertions ((?=, (?!, (?<=, (?<!) are not allowed (at offset 1)'],
    ['(?!a)b', 'lookaround'],
    ['(?<=a)b', 'lookaround'],
    ['(?<!a)b', 'lookaround'],
    ['a{1,5000}', 'repetition bound {1,5000} exceeds 1000'],
    ['a'.repeat(257), 'regular expression longer than 256 characters'],
    ['(', 'invalid regular expression'],
    ['a**', 'invalid regular expression'],
  ])('rejects %s', (pattern, reason) => {
    const result = compileSafeRegex(pattern);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toContain(reason);
  });

  it('distinguishes disjoint alternatives', () => {
    expect(regexHazard('(\\d|x)+')).toBeUndefined();
    expect(regexHazard('(\\s|\\S)+')).toBeUndefined();
    expect(regexHazard('([^a]|a)+')).toBeUndefined();
    expect(regexHazard('(\\u4e00|\\u4e01)+')).toBeUndefined();
    expect(regexHazard('([\\u4e00-\\u4e10]|\\u4e05)+')).toContain('same character');
  });

  it('compiles without flags, so matching is case-sensitive and tests are stateless', () => {
    const result = compileSafeRegex('^ab');
    expect(result.ok && result.regex.flags).toBe('');
  });
});
