import { actionOf, verbOf } from './action-mapping';

describe('verbOf', () => {
  it.each([
    ['GET', 'read'],
    ['HEAD', 'read'],
    ['OPTIONS', 'read'],
    ['POST', 'write'],
    ['PUT', 'write'],
    ['PATCH', 'write'],
    ['DELETE', 'delete'],
    // Methods without a verb of their own (docs/proxy.md "Actions") are treated as writes, the verb policies restrict most.
    ['PROPFIND', 'write'],
    ['TRACE', 'write'],
  ])('%s → %s', (method, verb) => {
    expect(verbOf(method)).toBe(verb);
  });
});

describe('actionOf', () => {
  it.each([
    ['read', 'a/b', undefined, 'read:a/b'],
    ['write', 'orders', undefined, 'write:orders'],
    ['delete', '', undefined, 'delete:'],
    ['read', 'a/b', '', 'read:a/b'],
    ['read', 'a/b', 'payments:transfer', 'payments:transfer'],
    ['write', 'x', 'read:elsewhere', 'read:elsewhere'],
  ])('%s %s with override %s → %s', (verb, path, override, action) => {
    expect(actionOf(verb, path, override)).toBe(action);
  });
});
