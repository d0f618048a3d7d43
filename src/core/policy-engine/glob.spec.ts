import fc from 'fast-check';
import { caseInsensitiveGlobMatcher, globMatcher, globProblem } from './glob';

describe('globMatcher', () => {
  it.each([
    ['FilePlugin', 'FilePlugin', true],
    ['FilePlugin', 'FilePlugin2', false],
    ['FilePlugin', 'fileplugin', false],
    ['*', '', true],
    ['*', 'anything', true],
    ['**', 'anything', true],
    ['Read*', 'ReadFile', true],
    ['Read*', 'Read', true],
    ['Read*', 'WriteFile', false],
    ['*File', 'ReadFile', true],
    ['*File', 'ReadFiles', false],
    ['*:/admin*', 'read:/admin/users', true],
    ['*:/admin*', 'read:/api', false],
    ['read:*.json', 'read:/a/b.json', true],
    ['read:*.json', 'read:/a/b.yaml', false],
    ['read:*.json', 'read:.json', true],
    ['a*b*c', 'abc', true],
    ['a*b*c', 'aXbYc', true],
    ['a*b*c', 'acb', false],
    ['a*b*c', 'abcb', false],
    ['a*b*b', 'ab', false],
    ['a*b*b', 'abb', true],
    ['a*a', 'a', false],
    ['a*a', 'aa', true],
    ['x*y*z*', 'xyz-tail', true],
    ['*x*y*', 'yx', false],
    ['*x*y*', 'axbyc', true],
  ])('%j matches %j: %s', (glob, subject, expected) => {
    expect(globMatcher(glob)(subject)).toBe(expected);
  });

  it.each([
    ['*:admin*', 'read:Admin/users', true],
    ['*:admin*', 'READ:ADMIN', true],
    ['*:Admin*', 'read:admin/users', true],
    ['FilePlugin', 'fileplugin', true],
    ['FilePlugin', 'FILEPLUGIN2', false],
    ['Read*', 'readFile', true],
    ['*File', 'READFILE', true],
    ['a*B*c', 'AxbYC', true],
    ['a*b*c', 'ACB', false],
    ['*:admin*', 'read:api/admin', false],
    ['*', 'Anything', true],
    ['straße', 'STRASSE', false],
    ['*ünïcode*', 'x-ÜNÏCODE-y', true],
    ['*:admin*', 'read:\u212Admin', false],
    ['kill*', '\u212Aill', true],
    ['*i', 'x\u0130', false],
    ['*i*', 'x\u0130', true],
    ['ab', 'AB', true],
    ['ab', 'A\u00df', false],
    ['a*z', 'Az', true],
    ['a*z', 'A', false],
  ])('case-insensitively, %j matches %j: %s', (glob, subject, expected) => {
    expect(caseInsensitiveGlobMatcher(glob)(subject)).toBe(expected);
  });

  it('case-insensitively matches exactly when the lower-cased glob matches the lower-cased subject', () => {
    const text = (chars: string[]) => fc.array(fc.constantFrom(...chars), { maxLength: 8 }).map((items) => items.join(''));
    const letters = ['a', 'A', 'b', 'B', 'k', 'K', 'i', 'I', ':', '/', '\u212A', '\u0130', '\u0307', '\u00df', '\u03a3', '\u00e9', '\u00c9'];
    fc.assert(
      fc.property(text([...letters, '*']), text(letters), (glob, subject) => {
        expect(caseInsensitiveGlobMatcher(glob)(subject)).toBe(globMatcher(glob.toLowerCase())(subject.toLowerCase()));
      }),
      { numRuns: 20_000 },
    );
  });

  it.each([
    ['', 'a glob must not be empty'],
    ['Read?', "unsupported glob character '?': only * is a wildcard"],
    ['[ab]', "unsupported glob character '[': only * is a wildcard"],
    ['{a,b}', "unsupported glob character '{': only * is a wildcard"],
  ])('globProblem(%j) explains', (glob, problem) => {
    expect(globProblem(glob)).toBe(problem);
  });

  it.each(['*', 'Read*', 'http', 'a*b'])('globProblem(%j) is undefined', (glob) => {
    expect(globProblem(glob)).toBeUndefined();
  });
});
