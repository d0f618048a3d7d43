/**
 * Trust-tier comparisons compile to rank comparisons: tier names and aliases become ranks at load
 * time, run-time values are ranked with one map lookup. Unknown tiers rank -1: every ordering with
 * them is false and `!=` is true, as `!=` is `not ==`.
 */
import type { SyncTest } from './sync-test';
import type { TierOperator } from './ir';
import type { ValueReader } from './path-readers';
import { rankOfValue } from './tiers';
import type { ValueTest } from './value-tests';

/** The operator with its sides swapped: `a < b` is `b > a`. */
export const FLIPPED_TIER_OPERATOR: Readonly<Record<TierOperator, TierOperator>> = {
  '==': '==',
  '!=': '!=',
  '<': '>',
  '<=': '>=',
  '>': '<',
  '>=': '<=',
};

/** `value <op> rank`, ranking the value as a tier name. */
export function rankTest(op: TierOperator, rank: number): ValueTest {
  switch (op) {
    case '==':
      return (value) => rankOfValue(value) === rank;
    case '!=':
      return (value) => rankOfValue(value) !== rank;
    case '<':
      return (value) => {
        const own = rankOfValue(value);
        return own >= 0 && own < rank;
      };
    case '<=':
      return (value) => {
        const own = rankOfValue(value);
        return own >= 0 && own <= rank;
      };
    case '>':
      return (value) => rankOfValue(value) > rank;
    case '>=':
      return (value) => rankOfValue(value) >= rank;
  }
}

/** `value in [tiers…]`, the list ranked at load time. */
export function rankSetTest(ranks: readonly number[]): ValueTest {
  const allowed = [false, false, false, false];
  for (const rank of ranks) if (rank >= 0) allowed[rank] = true;
  return (value) => {
    const rank = rankOfValue(value);
    return rank >= 0 && allowed[rank];
  };
}

/** `left <op> right` with both sides read at run time. */
export function tierComparison(op: TierOperator, readLeft: ValueReader, readRight: ValueReader): SyncTest {
  return (input) => compareRanks(op, rankOfValue(readLeft(input)), rankOfValue(readRight(input)));
}

function compareRanks(op: TierOperator, a: number, b: number): boolean {
  if (a < 0 || b < 0) return op === '!=';
  switch (op) {
    case '==':
      return a === b;
    case '!=':
      return a !== b;
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
  }
}

/** `left in <list read at run time>`: true when some element has the same rank. */
export function tierInList(readLeft: ValueReader, readList: ValueReader): SyncTest {
  return (input) => {
    const rank = rankOfValue(readLeft(input));
    const list = readList(input);
    if (rank < 0 || !Array.isArray(list)) return false;
    for (let i = 0; i < list.length; i++) {
      if (rankOfValue(list[i]) === rank) return true;
    }
    return false;
  };
}
