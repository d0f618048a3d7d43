import { MIN_TREND, trendOf, trendTargets } from './report';

describe('the trend rule of a bench', () => {
  it('fails a row whose rounds fall one after another, though their sum would pass', () => {
    const [target] = trendTargets([{ subject: 'proxy', opsPerSec: 900, extra: { perRound: '1000/980/950/700/650/600' } }]);
    expect(target.pass).toBe(false);
    expect(target.measured).toBe('rounds 1000/980/950/700/650/600: last third 63.1% of the first');
  });

  it('passes a row whose rounds wander around one level', () => {
    const [target] = trendTargets([{ subject: 'proxy', opsPerSec: 900, extra: { perRound: '1000/900/1050/950/1000/980' } }]);
    expect(target.pass).toBe(true);
  });

  it('judges the mean of the last third of the rounds against that of the first third', () => {
    expect(trendOf([10, 10, 10, 10, 10, 8])).toBeCloseTo(0.9);
    expect(trendOf([10, 10, 10, 10, 10, 10 * MIN_TREND])).toBeGreaterThanOrEqual(MIN_TREND);
  });

  it('does not judge a row of fewer than three rounds, or one without rounds', () => {
    expect(trendTargets([{ subject: 'a', opsPerSec: 1, extra: { perRound: '10/1' } }, { subject: 'b', opsPerSec: 1 }])).toEqual([]);
  });
});
