import { trustScore, TrustInputs } from './trust-score';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 24, 12);

function inputs(overrides: Partial<TrustInputs> = {}): TrustInputs {
  return { tier: 'verified', createdAtMs: NOW, revoked: false, decisions: 0, denied: 0, rateLimitHits: 0, nowMs: NOW, ...overrides };
}

describe('trustScore', () => {
  it('starts a new agent at its tier points', () => {
    expect(trustScore(inputs({ tier: 'unverified' })).score).toBe(250);
    expect(trustScore(inputs({ tier: 'verified' })).score).toBe(500);
    expect(trustScore(inputs({ tier: 'trusted' })).score).toBe(700);
    expect(trustScore(inputs({ tier: 'privileged' })).score).toBe(850);
  });

  it('reads tier aliases as their rung and unknown tiers as the lowest', () => {
    expect(trustScore(inputs({ tier: 'untrusted' })).factors.tier).toEqual({ value: 'unverified', points: 250 });
    expect(trustScore(inputs({ tier: 'elevated' })).factors.tier).toEqual({ value: 'trusted', points: 700 });
    expect(trustScore(inputs({ tier: 'root' })).factors.tier).toEqual({ value: 'unverified', points: 250 });
  });

  it('adds age points linearly up to 150 at 30 days', () => {
    expect(trustScore(inputs({ createdAtMs: NOW - 15 * DAY })).factors.age).toEqual({ days: 15, points: 75 });
    expect(trustScore(inputs({ createdAtMs: NOW - 30 * DAY })).factors.age).toEqual({ days: 30, points: 150 });
    expect(trustScore(inputs({ createdAtMs: NOW - 400 * DAY })).factors.age).toEqual({ days: 400, points: 150 });
    expect(trustScore(inputs({ createdAtMs: NOW - 0.1 * DAY })).factors.age).toEqual({ days: 0.1, points: 0 });
  });

  it('takes up to 400 points for the deny ratio, each denial at most 40 below 10 decisions', () => {
    expect(trustScore(inputs({ decisions: 100, denied: 25 })).factors.denyRatio).toEqual({ decisions: 100, denied: 25, ratio: 0.25, points: -100 });
    expect(trustScore(inputs({ decisions: 100, denied: 100 })).factors.denyRatio.points).toBe(-400);
    expect(trustScore(inputs({ decisions: 2, denied: 1 })).factors.denyRatio).toEqual({ decisions: 2, denied: 1, ratio: 0.5, points: -40 });
    expect(trustScore(inputs({ decisions: 0, denied: 0 })).factors.denyRatio).toEqual({ decisions: 0, denied: 0, ratio: 0, points: 0 });
  });

  it('takes 10 points per rate-limit hit, at most 200', () => {
    expect(trustScore(inputs({ decisions: 3, rateLimitHits: 3 })).factors.rateLimitHits).toEqual({ count: 3, points: -30 });
    expect(trustScore(inputs({ decisions: 50, rateLimitHits: 50 })).factors.rateLimitHits).toEqual({ count: 50, points: -200 });
  });

  it('sums the factors and clamps to 0-1000', () => {
    const mixed = inputs({ tier: 'trusted', createdAtMs: NOW - 6 * DAY, decisions: 40, denied: 4, rateLimitHits: 2 });
    // 700 + floor(150 * 6 / 30) - round(400 * 4 / 40) - 20
    expect(trustScore(mixed).score).toBe(700 + 30 - 40 - 20);
    expect(trustScore(inputs({ tier: 'privileged', createdAtMs: NOW - 60 * DAY })).score).toBe(1000);
    expect(trustScore(inputs({ tier: 'unverified', decisions: 100, denied: 80, rateLimitHits: 20 })).score).toBe(0);
  });

  it('scores a revoked agent 0 whatever its other factors', () => {
    const revoked = trustScore(inputs({ tier: 'privileged', createdAtMs: NOW - 60 * DAY, revoked: true }));
    expect(revoked.score).toBe(0);
    expect(revoked.factors.revoked).toEqual({ value: true });
    expect(revoked.factors.tier.points).toBe(850);
  });

  it('treats a creation time in the future as age 0', () => {
    expect(trustScore(inputs({ createdAtMs: NOW + DAY })).factors.age).toEqual({ days: 0, points: 0 });
  });
});
