/** Trust tiers, lowest first. Every alias maps to one of these rungs. */
export const CANONICAL_TIERS = ['unverified', 'verified', 'trusted', 'privileged'] as const;

export type TrustTier = (typeof CANONICAL_TIERS)[number];

// Each context of the service spells the tiers differently (docs/policies.md "Trust tiers").
const TIER_ALIASES: ReadonlyMap<string, TrustTier> = new Map<string, TrustTier>([
  ['unverified', 'unverified'],
  ['untrusted', 'unverified'],
  ['sandboxed', 'unverified'],
  ['restricted', 'unverified'],
  ['verified', 'verified'],
  ['standard', 'verified'],
  ['trusted', 'trusted'],
  ['elevated', 'trusted'],
  ['privileged', 'privileged'],
]);

const TIER_RANKS: ReadonlyMap<string, number> = new Map(
  [...TIER_ALIASES].map(([name, tier]) => [name, CANONICAL_TIERS.indexOf(tier)]),
);

/** Every accepted tier spelling (canonical names and aliases). */
export const TIER_NAMES: readonly string[] = [...TIER_ALIASES.keys()];

/** The canonical tier for a tier name or alias (case-sensitive), else undefined. */
export function canonicalTier(name: string): TrustTier | undefined {
  return TIER_ALIASES.get(name);
}

/** Rank of a tier name or alias: unverified 0 … privileged 3; undefined for unknown names. */
export function tierRank(name: string): number | undefined {
  return TIER_RANKS.get(name);
}

/** Rank of any runtime value, -1 when it is not a tier name (hot path: no allocation). */
export function rankOfValue(value: unknown): number {
  if (typeof value !== 'string') return -1;
  const rank = TIER_RANKS.get(value);
  return rank === undefined ? -1 : rank;
}
