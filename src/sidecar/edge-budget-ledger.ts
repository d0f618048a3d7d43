import type { BudgetLedger } from '../core/policy-engine/types';

/** What a spent budget at the edge tells the caller to wait, ms. */
const EDGE_RETRY_MS = 60_000;

/**
 * Budgets at the edge hold no slice of the gateway's total (docs/sidecar.md "Budgets"): a
 * sidecar counting on its own would grant each replica the whole budget again, more than its
 * source, so every `budget(...)` reads as spent here (429 budget_exceeded) and budgeted calls go
 * through the gateway.
 */
export const EDGE_BUDGET_LEDGER: BudgetLedger = {
  reserve: () => ({ retryAfterMs: EDGE_RETRY_MS }),
  peek: () => ({ retryAfterMs: EDGE_RETRY_MS }),
  settle: () => false,
};
