import { parseDuration } from './duration';

describe('parseDuration', () => {
  it.each([
    ['30s', 30_000],
    ['1m', 60_000],
    ['90m', 5_400_000],
    ['1h', 3_600_000],
    ['24h', 86_400_000],
    ['1d', 86_400_000],
    ['0s', 0],
    ['1.5s', 1_500],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '1', 'm', '1x', '1 m', ' 1m', '1m ', '-1m', '1ms', '1M', '1.m', '1e3s', '99999999999999999999d'])('rejects %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/invalid duration/);
  });
});
