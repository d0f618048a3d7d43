import { AuditSanitizer, REDACTED } from './audit-sanitizer';

const sanitizer = new AuditSanitizer(['password', 'secret', 'token', 'api_key']);

describe('AuditSanitizer redaction', () => {
  it('redacts values whose names contain a listed word, in any case, at every depth', () => {
    expect(
      sanitizer.json({
        password: 'p',
        userPassword: 'p2',
        API_KEY: 'k',
        x_api_key_id: 'k2',
        access_token: 't',
        safe: 'ok',
        nested: { client_secret: 's', keep: 1, deeper: [{ token: 't2', id: 3 }] },
        secret: { whole: 'object' },
      }),
    ).toEqual({
      password: REDACTED,
      userPassword: REDACTED,
      API_KEY: REDACTED,
      x_api_key_id: REDACTED,
      access_token: REDACTED,
      safe: 'ok',
      nested: { client_secret: REDACTED, keep: 1, deeper: [{ token: REDACTED, id: 3 }] },
      secret: REDACTED,
    });
    expect(REDACTED).toBe('[redacted]');
  });

  it('takes `-` and `_` in a word as optional, so api_key also names apiKey, api-key and x-api-key', () => {
    expect(sanitizer.json({ apiKey: 'k1', 'api-key': 'k2', headers: { 'X-Api-Key': 'k3' }, apikeyId: 'k4', api: 'ok', key: 'ok' })).toEqual({
      apiKey: REDACTED,
      'api-key': REDACTED,
      headers: { 'X-Api-Key': REDACTED },
      apikeyId: REDACTED,
      api: 'ok',
      key: 'ok',
    });
    expect(JSON.parse(sanitizer.serialize({ apiKey: 'k', keep: 1 })!)).toEqual({ apiKey: REDACTED, keep: 1 });
  });

  it('redacts only the configured words', () => {
    expect(new AuditSanitizer(['ssn']).json({ ssn: '1', user_ssn: '2', password: 'visible' })).toEqual({ ssn: REDACTED, user_ssn: REDACTED, password: 'visible' });
    expect(new AuditSanitizer([]).json({ password: 'visible' })).toEqual({ password: 'visible' });
  });

  it('leaves string values alone even when they look secret', () => {
    expect(sanitizer.json({ note: 'my password is hunter2' })).toEqual({ note: 'my password is hunter2' });
  });
});

describe('AuditSanitizer storable values', () => {
  it.each([
    ['NUL', 'a\u0000b', 'a\uFFFDb'],
    ['a lone high surrogate', 'x\uD800y', 'x\uFFFDy'],
    ['a lone low surrogate', '\uDC00', '\uFFFD'],
    ['a valid pair', 'ok 😀', 'ok 😀'],
  ])('cleans %s in text and JSON strings and keys', (_what, raw, clean) => {
    expect(sanitizer.text(raw)).toBe(clean);
    expect(sanitizer.json({ [raw]: [raw] })).toEqual({ [clean]: [clean] });
  });

  it('keeps null text null', () => {
    expect(sanitizer.text(null)).toBeNull();
  });

  it.each<[string, unknown, unknown]>([
    ['undefined', undefined, null],
    ['NaN', NaN, null],
    ['Infinity', Infinity, null],
    ['a function', () => 1, null],
    ['a bigint', BigInt(1), null],
    ['false', false, false],
    ['zero', 0, 0],
  ])('stores %s as JSON', (_what, value, stored) => {
    expect(sanitizer.json(value)).toEqual(stored);
  });
});

describe('AuditSanitizer bounds', () => {
  it('truncates strings over 2048 characters and keeps the result well formed', () => {
    expect(sanitizer.text('a'.repeat(2048))).toBe('a'.repeat(2048));
    expect(sanitizer.text('b'.repeat(3000))).toBe(`${'b'.repeat(2048)}…[truncated]`);
    const cutInPair = sanitizer.text(`${'c'.repeat(2047)}😀tail`)!;
    expect(cutInPair.isWellFormed()).toBe(true);
    expect(cutInPair.startsWith('c'.repeat(2047))).toBe(true);
    expect(cutInPair.endsWith('…[truncated]')).toBe(true);
  });

  it('keeps at most 100 array items and 100 object keys, the last saying how many more there were', () => {
    const long = sanitizer.json(Array.from({ length: 150 }, (_, i) => i));
    expect(long).toEqual([...Array.from({ length: 99 }, (_, i) => i), '[truncated: 51 more items]']);
    const wide = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`k${i}`, i]));
    const kept = sanitizer.json(wide) as Record<string, unknown>;
    expect(Object.keys(kept)).toHaveLength(100);
    expect(kept).toMatchObject({ k0: 0, k98: 98, '[truncated]': '51 more keys' });
    expect(kept).not.toHaveProperty('k99');
    // Cleaning what was kept again (the ingest of a sidecar's entry) keeps it as it is.
    expect(sanitizer.json(kept)).toEqual(kept);
    expect(sanitizer.json(long)).toEqual(long);
    expect(sanitizer.json(Array.from({ length: 100 }, (_, i) => i))).toHaveLength(100);
  });

  it('cuts nesting deeper than 6 levels', () => {
    expect(sanitizer.json({ a: { b: { c: { d: { e: { f: { g: 1 } } } } } } })).toEqual({ a: { b: { c: { d: { e: { f: '[truncated]' } } } } } });
    expect(sanitizer.json([[[[[[[1]]]]]]])).toEqual([[[[[['[truncated]']]]]]]);
  });
});

describe('AuditSanitizer.serialize', () => {
  it('stores plain values as their JSON text, unchanged', () => {
    const value = { args: { path: '/a', q: ['1', '2'] }, n: 1.5, ok: true, none: null };
    expect(sanitizer.serialize(value)).toBe(JSON.stringify(value));
    expect(sanitizer.serialize(null)).toBeNull();
    expect(sanitizer.serialize(undefined)).toBeNull();
  });

  it.each<[string, unknown, unknown]>([
    ['a secret-named key', { args: { Password: 'hunter2', keep: 'x' } }, { args: { Password: REDACTED, keep: 'x' } }],
    ['a NUL', { note: 'a\u0000b' }, { note: 'a\uFFFDb' }],
    ['a lone surrogate', { ['k\uD800']: 'v\uDFFF' }, { ['k\uFFFD']: 'v\uFFFD' }],
    ['a long string', { blob: 'z'.repeat(5000) }, { blob: `${'z'.repeat(2048)}…[truncated]` }],
  ])('cleans a value with %s', (_what, value, stored) => {
    const text = sanitizer.serialize(value)!;
    expect(JSON.parse(text)).toEqual(stored);
    expect(text.isWellFormed()).toBe(true);
    expect(text).not.toContain('\\u0000');
  });

  it('redacts whatever case the key is written in', () => {
    expect(JSON.parse(sanitizer.serialize({ X_API_KEY: 'k', Access_Token: 't' })!)).toEqual({ X_API_KEY: REDACTED, Access_Token: REDACTED });
  });

  it('redacts a key that names a word only once lower-cased (the Kelvin sign, a dotted capital I)', () => {
    // 'to\u212Aen'.toLowerCase() is 'token', though /token/i does not match it.
    expect(JSON.parse(sanitizer.serialize({ ['to\u212Aen']: 't', keep: 'x' })!)).toEqual({ ['to\u212Aen']: REDACTED, keep: 'x' });
    // 'ap\u0130'.toLowerCase() is 'api' and a combining dot.
    expect(JSON.parse(new AuditSanitizer(['api']).serialize({ ['ap\u0130']: 'k' })!)).toEqual({ ['ap\u0130']: REDACTED });
  });

  it('keeps secret words inside values, only keys are redacted', () => {
    expect(JSON.parse(sanitizer.serialize({ note: 'my password is hunter2' })!)).toEqual({ note: 'my password is hunter2' });
  });

  it('stores what JSON.stringify cannot take instead of throwing: a BigInt, a cycle', () => {
    expect(JSON.parse(sanitizer.serialize({ big: BigInt(7), keep: 1 })!)).toEqual({ big: null, keep: 1 });
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    const stored = JSON.parse(sanitizer.serialize(cyclic)!) as Record<string, unknown>;
    expect(stored.name).toBe('loop');
    expect(JSON.stringify(stored)).toContain('[truncated]');
  });
});

describe('AuditSanitizer URLs in values', () => {
  it.each([
    ['a secret-named query parameter', 'https://h/cb?token=K1&a=1', 'https://h/cb?token=[redacted]&a=1'],
    ['every one of several', 'https://h/?a=1&access_token=K1&api-key=K2#top', 'https://h/?a=1&access_token=[redacted]&api-key=[redacted]#top'],
    ['a percent-encoded name', 'https://h/?tok%65n=K1', 'https://h/?tok%65n=[redacted]'],
    ['a password in the authority', 'postgres://app:K1@db:5432/x', 'postgres://app:[redacted]@db:5432/x'],
    ['a bare query string', 'token=K1&page=2', 'token=[redacted]&page=2'],
    ['a relative URL', '/login?next=%2F&password=K1', '/login?next=%2F&password=[redacted]'],
  ])('redacts %s', (_what, raw, stored) => {
    expect(sanitizer.json({ url: raw })).toEqual({ url: stored });
    expect(JSON.parse(sanitizer.serialize({ args: [{ url: raw }] })!)).toEqual({ args: [{ url: stored }] });
    // Cleaning again (a sidecar's entry at the ingest) changes nothing.
    expect(sanitizer.json({ url: stored })).toEqual({ url: stored });
  });

  it('leaves URLs without secrets, and prose, as they are', () => {
    for (const value of ['https://user@h/?page=2&q=token', 'https://h/a:b@c', 'my password is hunter2', 'a = b', 'mailto:x@y.z']) {
      expect(sanitizer.json({ value })).toEqual({ value });
      expect(JSON.parse(sanitizer.serialize({ value })!)).toEqual({ value });
    }
  });
});
