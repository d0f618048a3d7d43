/**
 * Public types of the policy engine. The engine is a plain library: no Nest, no I/O.
 * The gateway, the PDP and the edge sidecar all import it, so they decide the same way.
 */

export type Effect = 'allow' | 'deny';

/** What a rule does when its condition holds: decide (`allow`, `deny`) or raise an alert and let evaluation go on (`alert`). */
export type RuleAction = Effect | 'alert' | 'require_approval' | 'label';

/** Where a `label` rule puts its labels: the session, or the agent itself (then with a ttl). */
export type LabelScope = 'session' | 'agent';

/** What a policy condition can read (docs/policies.md "What a condition can read"). */
export interface DecisionInput {
  agent: AgentFacts;
  action: string;
  resource: string;
  plugin: string;
  function: string;
  args: Readonly<Record<string, unknown>>;
  context: Readonly<Record<string, unknown>>;
  delegation: DelegationFacts;
  /** The agent's organization, its plan and usage: absent where no plan applies (then `org.*` reads as missing). */
  org?: OrgFacts;
  /** The MCP tool a call names: absent for other requests (then `tool.*` reads as missing). */
  tool?: ToolFacts;
  /**
   * What the decision remembers of the session and the agent (docs/policies.md "Sessions"):
   * absent where nothing is remembered, then labels read as empty and no call as made.
   */
  session?: SessionFacts;
}

/**
 * A session's facts as policies read them: a plain structure, so a test file can write one.
 * `session.labels`, `agent.labels`, `session.called(glob)` and `session.count(glob)` read it.
 */
export interface SessionFacts {
  /** The session id the caller declared (or the MCP session); `` for the agent's own scope. */
  id: string;
  /** Labels `label` rules put on this session. */
  labels: readonly string[];
  /** Labels put on the agent (`scope: agent`) and not yet expired: every session of the agent has them. */
  agent_labels: readonly string[];
  /** Actions let through earlier in the session, and how often each. */
  calls: Readonly<Record<string, number>>;
}

/** What policies read of an MCP tool (`tool.pinned == false`). */
export interface ToolFacts {
  /** The MCP server's name (MCP_SERVERS). */
  server: string;
  /** The tool's name. */
  name: string;
  /** True while the tool's definition is the one pinned (accepted); false once it changed. */
  pinned: boolean;
}

export interface AgentFacts {
  id: string;
  name: string;
  trust_tier: string;
  tags: readonly string[];
  org?: string;
}

/** What plan-aware policies read (`org.plan == "free"`, `org.usage.policy_checks > 900`). */
export interface OrgFacts {
  id: string;
  /** Plan id: `free`, `starter`, `professional` or `enterprise`. */
  plan: string;
  usage: {
    /** Policy checks counted this calendar month (UTC). */
    policy_checks: number;
    /** Active (not revoked) agents. */
    agents: number;
  };
}

export interface DelegationFacts {
  /** 1 = the agent acts directly; 2 or more = nested delegation. */
  depth: number;
  /** Agent ids from the original delegator to the acting agent. */
  chain: readonly string[];
}

/** The three keys a policy's `match` selects on. */
export interface MatchTarget {
  plugin: string;
  function: string;
  action: string;
}

/** A decision; objects for non-rate-limited outcomes are shared and must not be mutated. */
export interface Decision {
  effect: Effect;
  /** Deciding policy, else the first applicable policy, else `default`. */
  policy: string;
  /** Rule name, `<policy>#<index>`, `<policy>#default`, or null when no rule fired. */
  rule: string | null;
  reason: string;
  /** Set when the deciding deny rule fired because a rate_limit condition tripped. */
  rateLimit?: RateLimitTrip;
  /** The `alert` rules that fired (present only when one did); they never change the effect. */
  alerts?: readonly FiredAlert[];
  /**
   * Set when the deciding rule is a `require_approval` one: the effect is `deny` until a person
   * approves this very request (docs/policies.md "Approvals").
   */
  approval?: ApprovalRequirement;
  /** Every `require_approval` decision that held the request, when more than one did (this one first). */
  approvalHolds?: readonly Decision[];
  /** The `label` rules that fired (present only when one did): what to remember once the call is let through. */
  labels?: readonly LabelGrant[];
  /** Set when the deciding deny rule fired because a budget could not take the call's cost. */
  budget?: RateLimitTrip;
}

/** A `label` rule whose condition held: its labels go on the session or the agent. */
export interface LabelGrant {
  policy: string;
  rule: string;
  labels: readonly string[];
  scope: LabelScope;
  /** `scope: agent`: how long the labels stay on the agent, ms; 0 for session labels (they last as the session does). */
  ttlMs: number;
}

/** A budget's part of a call's cost, held until the call's outcome settles it (docs/policies.md "Budgets"). */
export interface BudgetHold {
  /** The budget's counter key (organization, policy, rule, call and partition). */
  key: string;
  /** The reservation within that counter. */
  id: string;
  /** What was reserved. */
  cost: number;
  /** The budget's limit and window, to settle against. */
  limit: number;
  windowMs: number;
}

/**
 * Running totals behind `budget(...)`: in process (engine) or Redis (gateway), or a lease (the
 * sidecar). A reservation counts at once; `settle` replaces its cost with the actual one (0
 * releases it). Sync answers keep evaluation sync.
 */
export interface BudgetLedger {
  /** Reserves `cost` unless the window's total would pass `limit`: the reservation id, else ms until enough frees (at least 1). */
  reserve(key: string, cost: number, limit: number, windowMs: number, nowMs: number): BudgetAnswer | Promise<BudgetAnswer>;
  /** What reserve would answer, reserving nothing (simulation). */
  peek(key: string, cost: number, limit: number, windowMs: number, nowMs: number): BudgetAnswer | Promise<BudgetAnswer>;
  /** Sets a reservation to its actual cost (0: released); false when it is unknown or expired. */
  settle(hold: BudgetHold, actualCost: number, nowMs: number): boolean | Promise<boolean>;
}

/** A reservation made, or the wait until the budget could take the cost. */
export type BudgetAnswer = { readonly id: string } | { readonly retryAfterMs: number };

/** A lease granted (its reservation id and how much it holds), or the wait until the budget could take the least asked. */
export type BudgetLeaseAnswer = { readonly id: string; readonly granted: number } | { readonly retryAfterMs: number };

/**
 * Slices of budgets for edge sidecars (docs/sidecar.md "Budgets"). A lease is one reservation
 * of up to `want` (at least `least`) dated at the lease's end, so it stays in the window as long
 * as any call spent from it; returning it settles it at what was spent (BudgetLedger.settle).
 * Its id starts with `<owner>/`, so only its owner returns it.
 */
export interface BudgetLeasing {
  lease(key: string, owner: string, least: number, want: number, limit: number, windowMs: number, leaseMs: number, nowMs: number): BudgetLeaseAnswer | Promise<BudgetLeaseAnswer>;
}

/** What a `require_approval` rule asks of an approval. */
export interface ApprovalRequirement {
  /** Tags of the approvers the request is meant for; empty: any admin of the organization. */
  approvers: readonly string[];
  /** How long the approval waits before it expires, ms. */
  timeoutMs: number;
}

/** An `alert` rule whose condition held: the request goes on, and an alert is raised. */
export interface FiredAlert {
  policy: string;
  /** Rule name, `<policy>#<index>` when unnamed. */
  rule: string;
  reason: string;
}

export interface RateLimitTrip {
  /** Human form, e.g. `10/1m per_agent`. */
  limit: string;
  /** Whole seconds until a slot frees, at least 1. */
  retryAfterSeconds: number;
}

/**
 * Sliding-window counters behind `rate_limit(...)`. Implementations: in-process (engine) and
 * Redis (gateway). A sync result keeps evaluation sync; a Promise makes it async.
 */
export interface RateLimiter {
  /** Records a hit unless `limit` hits already fall in the window; returns 0 if recorded, else ms until a slot frees. */
  hit(key: string, limit: number, windowMs: number, nowMs: number): number | Promise<number>;
  /** Like hit, but never records (simulation). */
  peek(key: string, limit: number, windowMs: number, nowMs: number): number | Promise<number>;
}

export interface EvaluationEnv {
  limiter: RateLimiter;
  nowMs: number;
  /** Behind `budget(...)`; without one every budget reads as spent (fail closed: nothing to count against). */
  budgets?: BudgetLedger;
  /** Where the reservations this evaluation made are collected, for the outcome to settle. */
  holds?: BudgetHold[];
}

/** A load-time error, positioned in the YAML source. Lines and columns are 1-based. */
export interface PolicyError {
  file: string;
  policy?: string;
  rule?: string;
  line: number;
  column: number;
  message: string;
}

export interface MatchDefinition {
  plugin?: string;
  function?: string;
  action?: string;
}

export interface RuleDefinition {
  name?: string;
  condition: string;
  action: RuleAction;
  reason: string;
  /** `require_approval`: the tags of whom the approval request is meant for (all admins: empty). */
  approvers?: string[];
  /** `require_approval`: how long a pending approval waits (`5m` by default). */
  timeout?: string;
  /** `label`: the labels the rule adds (plain words). */
  labels?: string[];
  /** `label`: where the labels go (`session` by default). */
  scope?: LabelScope;
  /** `label` with `scope: agent`: how long the labels stay (`1s` to `30d`). */
  ttl?: string;
  /** A rule calling `budget(...)`: what one call costs, reserved before the call (1 by default). */
  cost?: number;
}

/** `shadow`: evaluated and recorded on every decision, never enforced (docs/policies.md "Shadow policies"). */
export type PolicyMode = 'enforce' | 'shadow';

/** A policy as written in YAML or JSON. */
export interface PolicyDefinition {
  name: string;
  description?: string;
  /** `enforce` when absent. */
  mode?: PolicyMode;
  match?: MatchDefinition;
  default?: Effect;
  rules: RuleDefinition[];
}

/** What a shadow policy would have decided on its own, had it been in force. */
export interface ShadowDecision {
  policy: string;
  /** `require_approval`: it would have held the request for a person. */
  decision: 'allow' | 'deny' | 'require_approval';
  rule: string | null;
  reason: string;
}

/** One rule as tried by `explain` (simulation). */
export interface RuleTrace {
  rule: string;
  action: RuleAction;
  /** true/false: the condition's value; `not-reached`: a deny had already decided. */
  result: boolean | 'not-reached';
  /** Rate limits this rule consulted (dry run: nothing recorded). */
  rateLimit?: RateLimitTrip;
}

export interface PolicyTrace {
  policy: string;
  applicable: boolean;
  rules: RuleTrace[];
}

export interface Explanation {
  decision: Decision;
  trace: PolicyTrace[];
}
