import { globMatcher, globProblem } from './glob';

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
