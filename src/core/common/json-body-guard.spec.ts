import { findProblem, MAX_JSON_DEPTH } from './json-body-guard';

function nested(depth: number): object {
  let value: object = { leaf: true };
  for (let level = 1; level < depth; level++) value = level % 2 === 0 ? [value] : { next: value };
  return value;
}

describe('findProblem', () => {
  it('takes an ordinary body, and one nested exactly as deep as allowed', () => {
    expect(findProblem({ agentId: 'agt_1', arguments: { to: ['a@example.com'], n: 3, ok: false, none: null } })).toBeNull();
    expect(findProblem(nested(MAX_JSON_DEPTH))).toBeNull();
  });

  it('names where a body nests too deep', () => {
    expect(findProblem(nested(MAX_JSON_DEPTH + 1))).toMatch(/^the request body is nested deeper than 32 levels \(at \[0\]\.next\[0\]\.next/);
  });

  it('names the field holding a NUL character, in a value or in a field name', () => {
    expect(findProblem({ arguments: { list: ['ok', 'b\u0000d'] } })).toBe('arguments.list[1] must not contain NUL characters');
    expect(findProblem({ context: { 'a\u0000': 1 } })).toBe('field names must not contain NUL characters (at context)');
    expect(findProblem({ note: '\u0000' })).toBe('note must not contain NUL characters');
  });

  it('names a number beyond a double’s range (1e400 parses as Infinity)', () => {
    expect(findProblem(JSON.parse('{"arguments":{"amounts":[1,-1e400]}}') as object)).toBe('arguments.amounts[1] is not a finite number');
    expect(findProblem({ max: Number.MAX_VALUE, zero: -0 })).toBeNull();
  });

  it('names a lone surrogate only when asked to (the Nest routes), in a value or a field name; a pair is a character', () => {
    expect(findProblem({ email: 'a\ud800@example.com' })).toBeNull();
    expect(findProblem({ email: 'a\ud800@example.com' }, { wellFormed: true })).toBe('email must not contain lone surrogates (UTF-16 halves that UTF-8 cannot carry)');
    expect(findProblem({ tags: ['ok', '\udfff'] }, { wellFormed: true })).toBe('tags[1] must not contain lone surrogates (UTF-16 halves that UTF-8 cannot carry)');
    expect(findProblem({ metadata: { '\ud800': 1 } }, { wellFormed: true })).toBe('field names must not contain lone surrogates (at metadata)');
    expect(findProblem({ name: 'bot \ud83d\ude00' }, { wellFormed: true })).toBeNull();
  });
});
