/**
 * Checked form of a condition: names resolved, tiers ranked, regexes compiled, rate limits sized.
 * The compiler turns it into closures and cannot fail.
 */
import type { CompareOperator } from './ast';
import type { LinearRegex } from './linear-regex';

export const AGENT_FIELDS = ['id', 'name', 'trust_tier', 'tags', 'org'] as const;
export type AgentField = (typeof AGENT_FIELDS)[number];

export const INPUT_FIELDS = ['action', 'resource', 'plugin', 'function'] as const;
export type InputField = (typeof INPUT_FIELDS)[number];

export const DELEGATION_FIELDS = ['depth', 'chain'] as const;
export type DelegationField = (typeof DELEGATION_FIELDS)[number];

/** Readable `org.*` paths, dotted below `org`. */
export const ORG_FIELDS = ['id', 'plan', 'usage.policy_checks', 'usage.agents'] as const;
export type OrgField = (typeof ORG_FIELDS)[number];

/** Readable `tool.*` paths: the MCP tool a call names (docs/mcp.md). */
export const TOOL_FIELDS = ['server', 'name', 'pinned'] as const;
export type ToolField = (typeof TOOL_FIELDS)[number];

/** How a rate_limit call partitions its counters. */
export const RATE_LIMIT_SCOPES = ['per_agent', 'per_org', 'per_action', 'global'] as const;
export type RateLimitScope = (typeof RATE_LIMIT_SCOPES)[number];

/** Readable `session.*` paths; `agent.labels` reads the session facts too. */
export const SESSION_FIELDS = ['id', 'labels'] as const;
export type SessionField = (typeof SESSION_FIELDS)[number];

/** How a budget partitions its totals. */
export const BUDGET_SCOPES = ['per_session', 'per_agent', 'per_org', 'per_action', 'global'] as const;
export type BudgetScope = (typeof BUDGET_SCOPES)[number];

/** A readable location in the DecisionInput. */
export type PathRef =
  | { readonly kind: 'agent'; readonly field: AgentField }
  | { readonly kind: 'args' | 'context'; readonly segments: readonly string[] }
  | { readonly kind: 'input'; readonly field: InputField }
  | { readonly kind: 'delegation'; readonly field: DelegationField }
  | { readonly kind: 'org'; readonly field: OrgField }
  | { readonly kind: 'tool'; readonly field: ToolField }
  | { readonly kind: 'session'; readonly field: SessionField }
  | { readonly kind: 'agent-labels' };

export type LiteralValue = string | number | boolean | readonly (string | number | boolean)[];

/** An operand of a comparison. */
export type ValueIr =
  | { readonly kind: 'path'; readonly path: PathRef }
  | { readonly kind: 'literal'; readonly value: LiteralValue }
  /** A boolean sub-expression used as an operand, e.g. `(a == 1) == true`. Never contains rate_limit. */
  | { readonly kind: 'test'; readonly test: BoolIr }
  /** `session.count(glob)`: how many calls of the session matched the glob. */
  | { readonly kind: 'session-count'; readonly glob: string };

/** A side of a trust-tier comparison: a rank known at load time, or a value ranked at run time. */
export type TierOperand = { readonly kind: 'rank'; readonly rank: number } | { readonly kind: 'value'; readonly value: ValueIr };

export type TierOperator = '==' | '!=' | '<' | '<=' | '>' | '>=';

/** One `rate_limit(scope, count, window)` call. */
export interface RateLimitIr {
  readonly kind: 'rate_limit';
  readonly scope: RateLimitScope;
  readonly count: number;
  readonly windowMs: number;
  /** As written, for the `10/1m per_agent` label. */
  readonly windowText: string;
  /** 0-based position among the rate_limit calls of the condition, in source order. */
  readonly callIndex: number;
}

/** One `budget(scope, limit, window)` call; the rule's `cost` is what one call reserves. */
export interface BudgetIr {
  readonly kind: 'budget';
  readonly scope: BudgetScope;
  readonly limit: number;
  readonly windowMs: number;
  readonly windowText: string;
  /** 0-based position among the budget calls of the condition, in source order. */
  readonly callIndex: number;
}

/** A condition, or part of one, in a boolean position. */
export type BoolIr =
  | { readonly kind: 'and' | 'or'; readonly left: BoolIr; readonly right: BoolIr }
  | { readonly kind: 'not'; readonly operand: BoolIr }
  | { readonly kind: 'constant'; readonly value: boolean }
  /** A value in a boolean position: true only when it is exactly `true`. */
  | { readonly kind: 'truthy'; readonly value: ValueIr }
  | { readonly kind: 'exists'; readonly path: PathRef }
  | { readonly kind: 'compare'; readonly op: Exclude<CompareOperator, 'matches'>; readonly left: ValueIr; readonly right: ValueIr }
  | { readonly kind: 'matches'; readonly left: ValueIr; readonly regex: LinearRegex }
  | { readonly kind: 'tier-compare'; readonly op: TierOperator; readonly left: TierOperand; readonly right: TierOperand }
  | { readonly kind: 'tier-in'; readonly left: TierOperand; readonly ranks: readonly number[] }
  | { readonly kind: 'tier-in-value'; readonly left: TierOperand; readonly list: ValueIr }
  /** `session.called(glob)`: a call of the session matched the glob. */
  | { readonly kind: 'session-called'; readonly glob: string }
  | RateLimitIr
  | BudgetIr;
