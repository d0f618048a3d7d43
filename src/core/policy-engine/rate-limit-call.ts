import type { RateLimitIr } from './ir';
import type { DecisionInput, EvaluationEnv, RateLimiter, RateLimitTrip } from './types';

/**
 * Per-evaluation state of the rate_limit calls of one rule. A fresh recorder per rule keeps
 * concurrent asynchronous evaluations (Redis limiter) from seeing each other's trips.
 */
export class RateLimitRecorder {
  private tripLimit: string | null = null;
  private tripMs = 0;
  private consulted: string | null = null;
  /** True when the trip kept is a budget's (`budget_exceeded`), not a rate limit's. */
  tripIsBudget = false;

  constructor(readonly env: EvaluationEnv) {}

  /** Notes a limiter (or budget) answer; true when the window was full. Several trips keep the soonest retry. */
  record(limit: string, ms: number, budget = false): boolean {
    if (this.consulted === null) this.consulted = limit;
    if (!(ms > 0)) return false;
    if (this.tripLimit === null || ms < this.tripMs) {
      this.tripLimit = limit;
      this.tripMs = ms;
      this.tripIsBudget = budget;
    }
    return true;
  }

  /** The trip to report with a deny, if a rate_limit returned true. */
  trip(): RateLimitTrip | undefined {
    if (this.tripLimit === null) return undefined;
    return { limit: this.tripLimit, retryAfterSeconds: Math.max(1, Math.ceil(this.tripMs / 1000)) };
  }

  /** For explain: the trip, else the first limit consulted with a zero wait. */
  consultation(): RateLimitTrip | undefined {
    return this.trip() ?? (this.consulted === null ? undefined : { limit: this.consulted, retryAfterSeconds: 0 });
  }
}

/** A condition (or part) that may consult the limiter; async only when the limiter is. */
export type RateTest = (input: DecisionInput, recorder: RateLimitRecorder) => boolean | Promise<boolean>;

/** Where a rate_limit call sits: its counters are per call site. */
export interface RateLimitSite {
  readonly policy: string;
  readonly ruleIndex: number;
  /** Organization id; prefixes every key except `global` ones. */
  readonly namespace?: string;
  /** What one call of the rule costs its budgets (the rule's `cost`, 1 by default). */
  readonly cost?: number;
}

/** `10/1m per_agent`. */
export function rateLimitLabel(ir: RateLimitIr): string {
  return `${ir.count}/${ir.windowText} ${ir.scope}`;
}

/**
 * Counter key without its partition. Format (parts URI-encoded):
 * `rl:<namespace or ->:<policy>:<ruleIndex>:<callIndex>:<scope>:` + agent id | org | action
 * (nothing for `global`). Every counter, `global` ones too, is the organization's own: one
 * tenant never spends another's budget nor learns its traffic (docs/security.md).
 */
export function rateLimitKeyPrefix(ir: RateLimitIr, site: RateLimitSite): string {
  const callSite = `${encodeURIComponent(site.policy)}:${site.ruleIndex}:${ir.callIndex}`;
  const namespace = site.namespace === undefined ? '-' : encodeURIComponent(site.namespace);
  return `rl:${namespace}:${callSite}:${ir.scope}:`;
}

type Partition = (input: DecisionInput) => string;

function partitionOf(ir: RateLimitIr, namespace: string | undefined): Partition {
  switch (ir.scope) {
    case 'per_agent':
      return (input) => input.agent.id;
    case 'per_org':
      return (input) => input.agent.org ?? namespace ?? '';
    case 'per_action':
      return (input) => input.action;
    case 'global':
      return () => '';
  }
}

/** The closure behind one `rate_limit(scope, count, window)` call. */
export function rateLimitTest(ir: RateLimitIr, site: RateLimitSite): RateTest {
  const prefix = rateLimitKeyPrefix(ir, site);
  const partition = partitionOf(ir, site.namespace);
  const label = rateLimitLabel(ir);
  const { count, windowMs } = ir;
  return (input, recorder) => {
    const key = prefix + partition(input);
    const { limiter, nowMs } = recorder.env;
    const answer = limiter.hit(key, count, windowMs, nowMs);
    if (typeof answer === 'number') return recorder.record(label, answer);
    return recordLater(answer, recorder, label);
  };
}

// Apart from the closure above so the synchronous path allocates no context for the callback.
function recordLater(answer: Promise<number>, recorder: RateLimitRecorder, label: string): Promise<boolean> {
  return answer.then((ms) => recorder.record(label, ms));
}

/** The limiter as a dry run sees it: every hit is a peek, so nothing is recorded. */
export function peekingLimiter(limiter: RateLimiter): RateLimiter {
  return {
    hit: (key, limit, windowMs, nowMs) => limiter.peek(key, limit, windowMs, nowMs),
    peek: (key, limit, windowMs, nowMs) => limiter.peek(key, limit, windowMs, nowMs),
  };
}
