import { canonicalTier, TrustTier } from '../../core/policy-engine/tiers';

/** The scale of Microsoft's Agent Governance Toolkit. */
export const TRUST_SCORE_MAX = 1000;

/** Points each tier starts from (unknown tiers count as the lowest rung). */
export const TIER_POINTS: Readonly<Record<TrustTier, number>> = { unverified: 250, verified: 500, trusted: 700, privileged: 850 };
/** Age earns up to AGE_POINTS_MAX, linearly over AGE_FULL_DAYS. */
export const AGE_POINTS_MAX = 150;
export const AGE_FULL_DAYS = 30;
/** A deny ratio of 1 costs DENY_POINTS_MAX; below DENY_MIN_SAMPLE decisions, each denial costs DENY_POINTS_MAX / DENY_MIN_SAMPLE. */
export const DENY_POINTS_MAX = 400;
export const DENY_MIN_SAMPLE = 10;
/** Each rate-limit hit costs RATE_LIMIT_POINTS_EACH, at most RATE_LIMIT_POINTS_MAX. */
export const RATE_LIMIT_POINTS_EACH = 10;
export const RATE_LIMIT_POINTS_MAX = 200;

const DAY_MS = 86_400_000;

/** What the score is computed from. */
export interface TrustInputs {
  tier: string;
  createdAtMs: number;
  revoked: boolean;
  /** Decisions for the agent in the recent window. */
  decisions: number;
  /** Of them, denials by policy (rate-limit denials are counted apart). */
  denied: number;
  /** Of them, denials because a rate limit tripped. */
  rateLimitHits: number;
  nowMs: number;
}

export interface TrustFactors {
  tier: { value: TrustTier; points: number };
  age: { days: number; points: number };
  denyRatio: { decisions: number; denied: number; ratio: number; points: number };
  rateLimitHits: { count: number; points: number };
  revoked: { value: boolean };
}

export interface TrustScore {
  score: number;
  factors: TrustFactors;
}

/**
 * The trust score, 0-1000: tier points + age points - deny points - rate-limit points, clamped;
 * a revoked agent scores 0 (docs/trust.md).
 */
export function trustScore(inputs: TrustInputs): TrustScore {
  const tier = canonicalTier(inputs.tier) ?? 'unverified';
  const days = Math.max(0, inputs.nowMs - inputs.createdAtMs) / DAY_MS;
  const ratio = inputs.decisions === 0 ? 0 : inputs.denied / inputs.decisions;
  const factors: TrustFactors = {
    tier: { value: tier, points: TIER_POINTS[tier] },
    age: { days: round2(days), points: Math.floor((AGE_POINTS_MAX * Math.min(days, AGE_FULL_DAYS)) / AGE_FULL_DAYS) },
    denyRatio: {
      decisions: inputs.decisions,
      denied: inputs.denied,
      ratio: round2(ratio),
      points: penalty(Math.round((DENY_POINTS_MAX * inputs.denied) / Math.max(inputs.decisions, DENY_MIN_SAMPLE))),
    },
    rateLimitHits: { count: inputs.rateLimitHits, points: penalty(Math.min(RATE_LIMIT_POINTS_MAX, RATE_LIMIT_POINTS_EACH * inputs.rateLimitHits)) },
    revoked: { value: inputs.revoked },
  };
  if (inputs.revoked) return { score: 0, factors };
  const sum = factors.tier.points + factors.age.points + factors.denyRatio.points + factors.rateLimitHits.points;
  return { score: Math.min(TRUST_SCORE_MAX, Math.max(0, sum)), factors };
}

/** Points taken away, as a negative number (never -0, which JSON and equality treat oddly). */
function penalty(points: number): number {
  return points === 0 ? 0 : -points;
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
