import { SlidingWindowLimiter } from './sliding-window-limiter';

describe('SlidingWindowLimiter', () => {
  it('admits exactly `limit` hits per sliding window', () => {
    const limiter = new SlidingWindowLimiter();
    expect(limiter.hit('k', 3, 1_000, 0)).toBe(0);
    expect(limiter.hit('k', 3, 1_000, 100)).toBe(0);
    expect(limiter.hit('k', 3, 1_000, 200)).toBe(0);
    expect(limiter.hit('k', 3, 1_000, 300)).toBe(700);
    expect(limiter.hit('k', 3, 1_000, 999)).toBe(1);
    expect(limiter.hit('k', 3, 1_000, 1_000)).toBe(0);
    expect(limiter.hit('k', 3, 1_000, 1_000)).toBe(100);
    expect(limiter.hit('k', 3, 1_000, 1_100)).toBe(0);
    expect(limiter.hit('k', 3, 1_000, 1_150)).toBe(50);
    expect(limiter.hit('k', 3, 1_000, 1_200)).toBe(0);
  });

  it('does not record limited hits', () => {
    const limiter = new SlidingWindowLimiter();
    limiter.hit('k', 1, 1_000, 0);
    for (let t = 1; t < 1_000; t += 100) expect(limiter.hit('k', 1, 1_000, t)).toBe(1_000 - t);
    expect(limiter.hit('k', 1, 1_000, 1_000)).toBe(0);
  });

  it('keeps keys independent', () => {
    const limiter = new SlidingWindowLimiter();
    expect(limiter.hit('a', 1, 1_000, 0)).toBe(0);
    expect(limiter.hit('b', 1, 1_000, 0)).toBe(0);
    expect(limiter.hit('a', 1, 1_000, 10)).toBe(990);
  });

  it('peek answers like hit without recording', () => {
    const limiter = new SlidingWindowLimiter();
    expect(limiter.peek('k', 2, 1_000, 0)).toBe(0);
    limiter.hit('k', 2, 1_000, 0);
    expect(limiter.peek('k', 2, 1_000, 10)).toBe(0);
    limiter.hit('k', 2, 1_000, 10);
    expect(limiter.peek('k', 2, 1_000, 20)).toBe(980);
    expect(limiter.peek('k', 2, 1_000, 20)).toBe(980);
    expect(limiter.hit('k', 2, 1_000, 20)).toBe(980);
  });

  it('handles large limits exactly while the log grows', () => {
    const limiter = new SlidingWindowLimiter();
    for (let i = 0; i < 100; i++) expect(limiter.hit('k', 100, 10_000, i)).toBe(0);
    expect(limiter.hit('k', 100, 10_000, 100)).toBe(9_900);
    expect(limiter.hit('k', 100, 10_000, 10_000)).toBe(0);
    expect(limiter.hit('k', 100, 10_000, 10_000)).toBe(1);
  });

  it('stays exact when expired hits are dropped under the limit', () => {
    const limiter = new SlidingWindowLimiter();
    for (let t = 0; t < 100_000; t += 100) expect(limiter.hit('k', 50, 1_000, t)).toBe(0);
    for (let i = 0; i < 41; i++) expect(limiter.hit('k', 50, 1_000, 100_000)).toBe(0);
    expect(limiter.hit('k', 50, 1_000, 100_000)).toBe(100);
  });

  it('starts a fresh log when the limit of a key changes', () => {
    const limiter = new SlidingWindowLimiter();
    limiter.hit('k', 1, 1_000, 0);
    expect(limiter.hit('k', 1, 1_000, 1)).toBe(999);
    expect(limiter.hit('k', 2, 1_000, 2)).toBe(0);
    expect(limiter.peek('k', 1, 1_000, 2)).toBe(0);
  });

  it('evicts the least recently used key beyond maxKeys', () => {
    const limiter = new SlidingWindowLimiter({ maxKeys: 2 });
    limiter.hit('a', 1, 60_000, 0);
    limiter.hit('b', 1, 60_000, 0);
    limiter.hit('a', 1, 60_000, 1);
    limiter.hit('c', 1, 60_000, 2);
    expect(limiter.size).toBe(2);
    expect(limiter.hit('b', 1, 60_000, 3)).toBe(0);
    expect(limiter.hit('c', 1, 60_000, 3)).toBe(59_999);
  });

  it('sweeps keys idle for a whole window', () => {
    const limiter = new SlidingWindowLimiter();
    limiter.hit('short', 5, 1_000, 0);
    limiter.hit('long', 5, 60_000, 0);
    limiter.hit('recent', 5, 1_000, 900);
    expect(limiter.sweep(1_000)).toBe(1);
    expect(limiter.size).toBe(2);
    expect(limiter.sweep(60_000)).toBe(2);
    expect(limiter.size).toBe(0);
  });

  it('rejects a zero key bound', () => {
    expect(() => new SlidingWindowLimiter({ maxKeys: 0 })).toThrow('maxKeys must be at least 1');
  });
});
