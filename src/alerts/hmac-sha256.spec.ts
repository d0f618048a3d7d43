import { createHmac, randomBytes } from 'node:crypto';
import { HmacSha256 } from './hmac-sha256';

describe('HmacSha256', () => {
  const keys = { empty: Buffer.alloc(0), short: Buffer.from('bench-alert-secret'), 'one block': randomBytes(64), 'longer than a block': randomBytes(65), 'UTF-8': Buffer.from('clé✓') };

  it.each(Object.entries(keys))('gives what createHmac gives, key %s', (_name, key) => {
    const hmac = new HmacSha256(key, 16);
    // From empty to past the room it started with (it grows), with and without a prefix.
    for (const message of [Buffer.alloc(0), Buffer.from('{"a":"b"}'), Buffer.from('Zoë – “quoted” 🚨'), randomBytes(100), randomBytes(5000)]) {
      expect(hmac.hex(message)).toBe(createHmac('sha256', key).update(message).digest('hex'));
      expect(hmac.hex(message, '1700000000.')).toBe(createHmac('sha256', key).update('1700000000.').update(message).digest('hex'));
    }
  });

  it('signs the next message alone after a longer one', () => {
    const hmac = new HmacSha256(keys.short);
    hmac.hex(randomBytes(3000), '1.');
    expect(hmac.hex(Buffer.from('x'))).toBe(createHmac('sha256', keys.short).update('x').digest('hex'));
  });
});
