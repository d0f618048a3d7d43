import qs from 'qs';
import { parameterFields } from './parameter-fields';

/** Bracket names read as qs (Express's query parser and body-parser's extended forms) reads them. */
describe('parameterFields', () => {
  it.each([
    'amount=5',
    'amount=1&amount=2',
    'amount[]=5000',
    'amount[0]=5000',
    'amount[]=1&amount[]=2',
    'amount[0]=1&amount[1]=2',
    'amount[x]=5000',
    'a[b][c]=1',
    'a[0][b]=1',
    'a[b][]=1&a[b][]=2',
    'amount%5B%5D=5000',
    'a[=1',
    '[amount]=5000',
    'a[b]c[d]=1',
    'a[b[c]]=1',
    'a[25]=1',
  ])('reads %p as qs does', (query) => {
    expect(parameterFields(new URLSearchParams(query))).toEqual(qs.parse(query));
  });

  it('keeps brackets beyond the fifth in one name, as qs does', () => {
    const query = 'a[b][c][d][e][f][g]=1';
    expect(parameterFields(new URLSearchParams(query))).toEqual(qs.parse(query));
  });

  it('reads a name given plain and with brackets as one list', () => {
    expect(parameterFields(new URLSearchParams('amount=1&amount[]=5000'))).toEqual({ amount: ['1', '5000'] });
  });

  it('keeps __proto__ and constructor plain fields (qs drops them; a policy may still read them)', () => {
    const fields = parameterFields(new URLSearchParams('__proto__[x]=1&constructor=2'));
    expect(Object.getPrototypeOf(fields)).toBeNull();
    expect(fields.constructor).toBe('2');
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});
