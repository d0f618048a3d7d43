/**
 * Syntax tree of a condition. Nodes carry no positions, so trees compare with plain deep equality;
 * the parser records source spans in a side table (`spanOf`).
 */

export type CompareOperator =
  | '=='
  | '!='
  | '<'
  | '<='
  | '>'
  | '>='
  | 'starts_with'
  | 'ends_with'
  | 'contains'
  | 'in'
  | 'matches';

/** Comparison operators written as symbols, and as words. */
export const SYMBOL_OPERATORS: readonly CompareOperator[] = ['==', '!=', '<', '<=', '>', '>='];
export const WORD_OPERATORS: readonly CompareOperator[] = ['starts_with', 'ends_with', 'contains', 'in', 'matches'];

/** Words that cannot start a path. */
export const KEYWORDS: ReadonlySet<string> = new Set(['and', 'or', 'not', 'true', 'false', ...WORD_OPERATORS]);

export interface OrNode {
  readonly kind: 'or';
  readonly left: ConditionAst;
  readonly right: ConditionAst;
}

export interface AndNode {
  readonly kind: 'and';
  readonly left: ConditionAst;
  readonly right: ConditionAst;
}

export interface NotNode {
  readonly kind: 'not';
  readonly operand: ConditionAst;
}

export interface CompareNode {
  readonly kind: 'compare';
  readonly op: CompareOperator;
  readonly left: ConditionAst;
  readonly right: ConditionAst;
}

/** `root.seg["seg"]…`; a bare word (tier name, rate-limit scope) is a path without segments. */
export interface PathNode {
  readonly kind: 'path';
  readonly root: string;
  readonly segments: readonly string[];
}

export interface StringNode {
  readonly kind: 'string';
  readonly value: string;
}

export interface NumberNode {
  readonly kind: 'number';
  readonly value: number;
}

export interface BooleanNode {
  readonly kind: 'boolean';
  readonly value: boolean;
}

/** The literals a list may hold. */
export type LiteralNode = StringNode | NumberNode | BooleanNode;

export interface ListNode {
  readonly kind: 'list';
  readonly items: readonly LiteralNode[];
}

/** A number with a unit suffix, e.g. `1m`; only meaningful as a rate_limit window. */
export interface DurationNode {
  readonly kind: 'duration';
  readonly text: string;
}

export interface CallNode {
  readonly kind: 'call';
  readonly name: string;
  readonly args: readonly ConditionAst[];
}

/** Any node of a parsed condition. */
export type ConditionAst =
  | OrNode
  | AndNode
  | NotNode
  | CompareNode
  | PathNode
  | StringNode
  | NumberNode
  | BooleanNode
  | ListNode
  | DurationNode
  | CallNode;

/** Where a node came from: offsets into the condition text; `segments` are the start offsets of path segments. */
export interface Span {
  readonly start: number;
  readonly end: number;
  readonly segments?: readonly number[];
}

const spans = new WeakMap<ConditionAst, Span>();

/** Records the source span of a node (parser only). */
export function withSpan<T extends ConditionAst>(node: T, span: Span): T {
  spans.set(node, span);
  return node;
}

/** The source span of a parsed node; undefined for nodes built by hand. */
export function spanOf(node: ConditionAst): Span | undefined {
  return spans.get(node);
}
