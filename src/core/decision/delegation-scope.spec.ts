import { globWithin, scopeAllows, scopeDenial, scopeProblem } from './delegation-scope';

describe('delegation scope', () => {
  it('allows an action matched by any glob of the scope', () => {
    expect(scopeAllows(['read:*', 'write:reports/*'], 'read:files/a')).toBe(true);
    expect(scopeAllows(['read:*', 'write:reports/*'], 'write:reports/q3')).toBe(true);
    expect(scopeAllows(['read:*', 'write:reports/*'], 'write:files/a')).toBe(false);
    expect(scopeAllows([], 'read:x')).toBe(false);
  });

  it('holds an action to the case its scope names: another case is outside, so denied', () => {
    expect(scopeAllows(['read:docs/*'], 'read:DOCS/secret')).toBe(false);
    expect(scopeDenial(['read:docs/*'], { action: 'read:Docs/a' })?.effect).toBe('deny');
    expect(globWithin('read:DOCS/*', ['read:docs/*'])).toBe(false);
  });

  it('knows a narrower glob is within a wider one and a wider one is not', () => {
    expect(globWithin('read:files/*', ['read:*'])).toBe(true);
    expect(globWithin('read:*', ['read:*'])).toBe(true);
    expect(globWithin('read:files/a', ['read:*'])).toBe(true);
    expect(globWithin('*', ['read:*'])).toBe(false);
    expect(globWithin('read:*', ['read:files/*'])).toBe(false);
    expect(globWithin('write:*', ['read:*'])).toBe(false);
    expect(globWithin('read:*:x', ['read:*'])).toBe(true);
    expect(globWithin('*x', ['read:*'])).toBe(false);
    expect(globWithin('anything*', ['*'])).toBe(true);
  });

  it('names the glob that would widen the scope, or a malformed one', () => {
    expect(scopeProblem(['read:*'], undefined)).toBeUndefined();
    expect(scopeProblem(['read:files/*'], ['read:*', 'write:x'])).toBeUndefined();
    expect(scopeProblem(['read:files/*', 'write:*'], ['read:*', 'write:x'])).toBe(
      'scope glob "write:*" is not within the delegating token\'s scope (read:*, write:x): each hop can only narrow',
    );
    expect(scopeProblem([], undefined)).toBe('scope must name at least one action glob');
    expect(scopeProblem(['read:?'], undefined)).toBe("scope glob \"read:?\": unsupported glob character '?': only * is a wildcard");
  });

  it('denies outside the scope with the delegation-scope policy, and nothing without a scope', () => {
    const request = { source: 'check', action: 'write:files/a', function: 'write', resource: 'files/a' };
    expect(scopeDenial(undefined, request)).toBeUndefined();
    expect(scopeDenial(['write:*'], request)).toBeUndefined();
    expect(scopeDenial(['read:*'], request)).toEqual({
      effect: 'deny',
      policy: 'delegation-scope',
      rule: null,
      reason: 'action write:files/a is outside the delegated scope (read:*)',
    });
  });

  it('holds the request to the action derived from it whatever action it names', () => {
    const named = { action: 'read:files/a', derivedAction: 'write:files/a' };
    expect(scopeDenial(['read:*'], named)?.reason).toBe('action write:files/a is outside the delegated scope (read:*)');
    expect(scopeDenial(['read:*', 'write:*'], named)).toBeUndefined();
  });
});
