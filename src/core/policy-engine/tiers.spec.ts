import { CANONICAL_TIERS, canonicalTier, rankOfValue, TIER_NAMES, tierRank } from './tiers';

describe('trust tiers', () => {
  it('orders the canonical tiers lowest first', () => {
    expect(CANONICAL_TIERS).toEqual(['unverified', 'verified', 'trusted', 'privileged']);
  });

  it.each([
    ['unverified', 'unverified', 0],
    ['untrusted', 'unverified', 0],
    ['sandboxed', 'unverified', 0],
    ['restricted', 'unverified', 0],
    ['verified', 'verified', 1],
    ['standard', 'verified', 1],
    ['trusted', 'trusted', 2],
    ['elevated', 'trusted', 2],
    ['privileged', 'privileged', 3],
  ])('%s is %s with rank %d', (name, canonical, rank) => {
    expect(canonicalTier(name)).toBe(canonical);
    expect(tierRank(name)).toBe(rank);
    expect(rankOfValue(name)).toBe(rank);
    expect(TIER_NAMES).toContain(name);
  });

  it.each(['Trusted', 'admin', '', 'constructor', '__proto__', 'toString'])('%j is not a tier', (name) => {
    expect(canonicalTier(name)).toBeUndefined();
    expect(tierRank(name)).toBeUndefined();
    expect(rankOfValue(name)).toBe(-1);
  });

  it.each([[undefined], [null], [2], [['trusted']]])('rankOfValue(%j) is -1', (value) => {
    expect(rankOfValue(value)).toBe(-1);
  });
});
