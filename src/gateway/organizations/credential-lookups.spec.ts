import { CredentialLookups } from './credential-lookups';

/** A table of known hashes standing in for the database, counting its lookups; `hold` keeps them open until released. */
function table(known: Record<string, string> = {}) {
  const rows = new Map(Object.entries(known));
  const held: Array<() => void> = [];
  const state = {
    queries: 0,
    hold: false,
    rows,
    /** Lets the oldest held lookup answer what it read. */
    release: () => held.shift()?.(),
    load: (hash: string) => async () => {
      state.queries++;
      const found = rows.get(hash) ?? null;
      if (state.hold) await new Promise<void>((resolve) => held.push(resolve));
      return found;
    },
  };
  return state;
}

describe('CredentialLookups', () => {
  it('refuses an unknown hash from memory until its refusal expires', async () => {
    const db = table();
    const lookups = new CredentialLookups<string>(30_000);
    expect(await lookups.lookup('bad', db.load('bad'), 0)).toBeNull();
    expect(await lookups.lookup('bad', db.load('bad'), 29_999)).toBeNull();
    expect(db.queries).toBe(1);
    expect(await lookups.lookup('bad', db.load('bad'), 30_000)).toBeNull();
    expect(db.queries).toBe(2);
  });

  it('asks every time for a known hash (found rows are not kept)', async () => {
    const db = table({ good: 'org_a' });
    const lookups = new CredentialLookups<string>();
    expect(await lookups.lookup('good', db.load('good'))).toBe('org_a');
    expect(await lookups.lookup('good', db.load('good'))).toBe('org_a');
    expect(db.queries).toBe(2);
  });

  it('shares one lookup among concurrent calls for the same hash', async () => {
    const db = table();
    db.hold = true;
    const lookups = new CredentialLookups<string>();
    const calls = Array.from({ length: 50 }, () => lookups.lookup('bad', db.load('bad')));
    db.release();
    expect(await Promise.all(calls)).toEqual(Array(50).fill(null));
    expect(db.queries).toBe(1);
  });

  it('finds a credential issued after it was refused, once refusals are forgotten', async () => {
    const db = table();
    const lookups = new CredentialLookups<string>();
    expect(await lookups.lookup('chosen', db.load('chosen'))).toBeNull();
    db.rows.set('chosen', 'org_default');
    lookups.forgetRefused();
    expect(await lookups.lookup('chosen', db.load('chosen'))).toBe('org_default');
  });

  it('does not refuse from a lookup that was under way when refusals were forgotten', async () => {
    const db = table();
    db.hold = true;
    const lookups = new CredentialLookups<string>();
    const before = lookups.lookup('chosen', db.load('chosen'));
    db.rows.set('chosen', 'org_default');
    lookups.forgetRefused();
    db.release();
    expect(await before).toBeNull();
    db.hold = false;
    expect(await lookups.lookup('chosen', db.load('chosen'))).toBe('org_default');
  });

  it('starts a lookup of its own for a call made after the lookups under way were dropped', async () => {
    const db = table({ key: 'org_a' });
    db.hold = true;
    const lookups = new CredentialLookups<string>();
    const before = lookups.lookup('key', db.load('key'));
    db.rows.delete('key');
    lookups.forgetLookupsUnderWay();
    const after = lookups.lookup('key', db.load('key'));
    db.release();
    expect(await before).toBe('org_a');
    db.release();
    expect(await after).toBeNull();
    expect(db.queries).toBe(2);
  });

  it('remembers at most its bound of refusals, forgetting the oldest first', async () => {
    const db = table();
    const lookups = new CredentialLookups<string>(30_000, 3);
    for (const hash of ['a', 'b', 'c', 'd']) await lookups.lookup(hash, db.load(hash), 0);
    expect(db.queries).toBe(4);
    for (const hash of ['b', 'c', 'd']) await lookups.lookup(hash, db.load(hash), 1);
    expect(db.queries).toBe(4);
    await lookups.lookup('a', db.load('a'), 1);
    expect(db.queries).toBe(5);
  });

  it('does not remember a failed lookup: the next call asks again', async () => {
    const lookups = new CredentialLookups<string>();
    await expect(lookups.lookup('bad', () => Promise.reject(new Error('database down')))).rejects.toThrow('database down');
    expect(await lookups.lookup('bad', async () => null)).toBeNull();
  });
});
