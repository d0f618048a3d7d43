import type { BudgetIr } from './ir';
import type { RateLimitRecorder, RateLimitSite, RateTest } from './rate-limit-call';
import type { BudgetAnswer, BudgetLedger, DecisionInput } from './types';

/** How long a budget read as spent (no ledger) tells the caller to wait, ms. */
const NO_LEDGER_RETRY_MS = 60_000;

/** `100/1d per_agent budget`. */
export function budgetLabel(ir: BudgetIr): string {
  return `${ir.limit}/${ir.windowText} ${ir.scope} budget`;
}

/**
 * Total key without its partition: `bg:<namespace or ->:<policy>:<ruleIndex>:<callIndex>:<scope>:`
 * (parts URI-encoded), then the agent id, `<agent id>:<session id>`, the organization or the
 * action. Every total is the organization's own, as rate-limit counters are.
 */
export function budgetKeyPrefix(ir: BudgetIr, site: RateLimitSite): string {
  const namespace = site.namespace === undefined ? '-' : encodeURIComponent(site.namespace);
  return `bg:${namespace}:${encodeURIComponent(site.policy)}:${site.ruleIndex}:${ir.callIndex}:${ir.scope}:`;
}

type Partition = (input: DecisionInput) => string;

function partitionOf(ir: BudgetIr, namespace: string | undefined): Partition {
  switch (ir.scope) {
    case 'per_session':
      // A session is its agent's: the same id named by two agents is two sessions.
      return (input) => `${encodeURIComponent(input.agent.id)}:${encodeURIComponent(input.session?.id ?? '')}`;
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

/**
 * The closure behind one `budget(scope, limit, window)` call: true (the budget is spent) when the
 * rule's cost does not fit, else the cost is reserved and the hold collected in `env.holds`, for
 * the call's outcome to settle (or the decision core to release when the request is denied).
 */
export function budgetTest(ir: BudgetIr, site: RateLimitSite): RateTest {
  const prefix = budgetKeyPrefix(ir, site);
  const partition = partitionOf(ir, site.namespace);
  const label = budgetLabel(ir);
  const cost = site.cost ?? 1;
  return (input, recorder) => {
    const ledger = recorder.env.budgets;
    if (ledger === undefined) return recorder.record(label, NO_LEDGER_RETRY_MS, true);
    const key = prefix + partition(input);
    const answer = ledger.reserve(key, cost, ir.limit, ir.windowMs, recorder.env.nowMs);
    if (!(answer instanceof Promise)) return held(answer, key, cost, ir, label, recorder);
    return answer.then((resolved) => held(resolved, key, cost, ir, label, recorder));
  };
}

function held(answer: BudgetAnswer, key: string, cost: number, ir: BudgetIr, label: string, recorder: RateLimitRecorder): boolean {
  if ('retryAfterMs' in answer) return recorder.record(label, Math.max(1, answer.retryAfterMs), true);
  // An empty id holds nothing new: a budget another question of the same request already reserved (onceLedger), or a dry run.
  if (answer.id !== '') recorder.env.holds?.push({ key, id: answer.id, cost, limit: ir.limit, windowMs: ir.windowMs });
  return recorder.record(label, 0, true);
}

/** The ledger as a dry run sees it: every reservation is a peek, nothing is held. */
export function peekingLedger(ledger: BudgetLedger): BudgetLedger {
  return {
    reserve: (key, cost, limit, windowMs, nowMs) => ledger.peek(key, cost, limit, windowMs, nowMs),
    peek: (key, cost, limit, windowMs, nowMs) => ledger.peek(key, cost, limit, windowMs, nowMs),
    settle: () => false,
  };
}
