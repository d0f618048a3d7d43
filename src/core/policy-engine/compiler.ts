import type { BoolIr, TierOperand, TierOperator, ValueIr } from './ir';
import { containsValue, endsWith, looseEquals, orderOf, startsWith } from './operators';
import { pathReader, ValueReader } from './path-readers';
import { testAtPath } from './path-tests';
import { RateLimitRecorder, RateLimitSite, RateTest, rateLimitTest } from './rate-limit-call';
import { FLIPPED_TIER_OPERATOR, rankSetTest, rankTest, tierComparison, tierInList } from './tier-tests';
import { CANONICAL_TIERS } from './tiers';
import type { SyncTest } from './sync-test';
import type { DecisionInput } from './types';
import { TypeFit, typeFitOf } from './type-fit';
import { literalTest, reversedLiteralTest, ValueTest } from './value-tests';
import { budgetTest } from './budget-call';
import { sessionCalledTest, sessionCountReader } from './session-calls';


/** Exactly one of the two is set: `sync` when the condition never consults a limiter. */
export interface CompiledCondition {
  readonly sync: SyncTest | null;
  readonly rated: RateTest | null;
}

/**
 * Compiles a checked condition into closures; a rule's rate_limit counters are keyed by `site`.
 * `denies`: the rule denies (or alerts) when the condition holds. A caller-supplied value of the
 * wrong type for a comparison (type-fit.ts) is then read as the answer that fires the rule, and
 * for an allow rule as the answer that does not: a mismatch never lets a request through.
 */
export function compileCondition(ir: BoolIr, site: RateLimitSite, denies = true): CompiledCondition {
  if (!usesRateLimit(ir)) return { sync: compileTest(ir, denies), rated: null };
  return { sync: null, rated: compileRated(ir, site, denies) };
}

function usesRateLimit(ir: BoolIr): boolean {
  switch (ir.kind) {
    case 'rate_limit':
    case 'budget':
      return true;
    case 'and':
    case 'or':
      return usesRateLimit(ir.left) || usesRateLimit(ir.right);
    case 'not':
      return usesRateLimit(ir.operand);
    default:
      return false;
  }
}

// Combinators stay synchronous while their operands are; they chain a promise only once a
// limiter answered with one. The `.then` callbacks live in separate functions because a closure
// over the call's arguments would allocate a context on every call, even on the synchronous path.
function compileRated(ir: BoolIr, site: RateLimitSite, onMismatch: boolean): RateTest {
  if (!usesRateLimit(ir)) {
    const test = compileTest(ir, onMismatch);
    return (input) => test(input);
  }
  switch (ir.kind) {
    case 'rate_limit':
      return rateLimitTest(ir, site);
    case 'budget':
      return budgetTest(ir, site);
    case 'and':
      return ratedAnd(compileRated(ir.left, site, onMismatch), compileRated(ir.right, site, onMismatch));
    case 'or':
      return ratedOr(compileRated(ir.left, site, onMismatch), compileRated(ir.right, site, onMismatch));
    case 'not':
      return ratedNot(compileRated(ir.operand, site, !onMismatch));
    default:
      throw new Error(`internal: ${ir.kind} cannot hold a rate_limit`);
  }
}

function ratedAnd(left: RateTest, right: RateTest): RateTest {
  return (input, recorder) => {
    const first = left(input, recorder);
    if (first === false) return false;
    if (first === true) return right(input, recorder);
    return andLater(first, right, input, recorder);
  };
}

function andLater(first: Promise<boolean>, right: RateTest, input: DecisionInput, recorder: RateLimitRecorder): Promise<boolean> {
  return first.then((value) => (value ? right(input, recorder) : false));
}

function ratedOr(left: RateTest, right: RateTest): RateTest {
  return (input, recorder) => {
    const first = left(input, recorder);
    if (first === true) return true;
    if (first === false) return right(input, recorder);
    return orLater(first, right, input, recorder);
  };
}

function orLater(first: Promise<boolean>, right: RateTest, input: DecisionInput, recorder: RateLimitRecorder): Promise<boolean> {
  return first.then((value) => (value ? true : right(input, recorder)));
}

function ratedNot(operand: RateTest): RateTest {
  return (input, recorder) => {
    const value = operand(input, recorder);
    return typeof value === 'boolean' ? !value : value.then((resolved) => !resolved);
  };
}

/** `onMismatch`: what a comparison answers for a caller-supplied value of the wrong type (see compileCondition); flipped under `not`. */
function compileTest(ir: BoolIr, onMismatch: boolean): SyncTest {
  switch (ir.kind) {
    case 'and': {
      const left = compileTest(ir.left, onMismatch);
      const right = compileTest(ir.right, onMismatch);
      return (input) => left(input) && right(input);
    }
    case 'or': {
      const left = compileTest(ir.left, onMismatch);
      const right = compileTest(ir.right, onMismatch);
      return (input) => left(input) || right(input);
    }
    case 'not': {
      const operand = compileTest(ir.operand, !onMismatch);
      return (input) => !operand(input);
    }
    case 'constant': {
      const value = ir.value;
      return () => value;
    }
    case 'truthy': {
      const read = compileValue(ir.value);
      return (input) => read(input) === true;
    }
    case 'exists': {
      const read = pathReader(ir.path);
      return (input) => read(input) !== undefined;
    }
    case 'compare':
      return compileCompare(ir.op, ir.left, ir.right, onMismatch);
    case 'matches': {
      const regex = ir.regex;
      return testValue(ir.left, guarded(ir.left, typeFitOf('matches', ''), (value) => typeof value === 'string' && regex.test(value), onMismatch));
    }
    case 'tier-compare':
      return compileTierCompare(ir.op, ir.left, ir.right);
    case 'tier-in':
      return ir.left.kind === 'rank' ? constant(rankSetTest(ir.ranks)(ir.left.rank)) : testValue(ir.left.value, rankSetTest(ir.ranks));
    case 'tier-in-value':
      return tierInList(rankReader(ir.left), compileValue(ir.list));
    case 'session-called':
      return sessionCalledTest(ir.glob, onMismatch);
    case 'rate_limit':
    case 'budget':
      throw new Error(`internal: ${ir.kind} in a synchronous test`);
  }
}

function constant(value: boolean): SyncTest {
  return () => value;
}

/**
 * The test, answering `onMismatch` for a present value of the wrong kind when the operand is a
 * caller-supplied path (`args.*`, `context.*`); the agent's record and the request's own fields
 * are the gateway's, not the caller's.
 */
function guarded(operand: ValueIr, fit: TypeFit | undefined, test: ValueTest, onMismatch: boolean): ValueTest {
  if (fit === undefined || operand.kind !== 'path' || (operand.path.kind !== 'args' && operand.path.kind !== 'context')) return test;
  return (value) => (value === undefined || fit(value) ? test(value) : onMismatch);
}

/** A test of an operand's value; paths get the read inlined. */
function testValue(ir: ValueIr, test: ValueTest): SyncTest {
  if (ir.kind === 'path') return testAtPath(ir.path, test);
  const read = compileValue(ir);
  return (input) => test(read(input));
}

function compileTierCompare(op: TierOperator, left: TierOperand, right: TierOperand): SyncTest {
  if (right.kind === 'rank' && left.kind === 'value') return testValue(left.value, rankTest(op, right.rank));
  if (left.kind === 'rank' && right.kind === 'value') return testValue(right.value, rankTest(FLIPPED_TIER_OPERATOR[op], left.rank));
  return tierComparison(op, rankReader(left), rankReader(right));
}

// A rank known at load time is read back as a tier name, so both kinds of operand share one path.
function rankReader(operand: TierOperand): ValueReader {
  if (operand.kind === 'value') return compileValue(operand.value);
  const name = CANONICAL_TIERS[operand.rank];
  return () => name;
}

function compileValue(ir: ValueIr): ValueReader {
  switch (ir.kind) {
    case 'path':
      return pathReader(ir.path);
    case 'literal': {
      const value = ir.value;
      return () => value;
    }
    case 'test':
      return compileTest(ir.test, false);
    case 'session-count':
      return sessionCountReader(ir.glob);
  }
}

type GeneralOperator = Extract<BoolIr, { kind: 'compare' }>['op'];

function compileCompare(op: GeneralOperator, left: ValueIr, right: ValueIr, onMismatch: boolean): SyncTest {
  if (right.kind === 'literal' && left.kind !== 'literal') return testValue(left, guarded(left, typeFitOf(op, right.value), literalTest(op, right.value), onMismatch));
  if (left.kind === 'literal' && right.kind !== 'literal') return testValue(right, guarded(right, typeFitOf(op, left.value, true), reversedLiteralTest(op, left.value), onMismatch));
  const readLeft = compileValue(left);
  const readRight = compileValue(right);
  const compare = GENERAL_OPERATORS[op];
  return (input) => compare(readLeft(input), readRight(input));
}

const GENERAL_OPERATORS: Readonly<Record<GeneralOperator, (a: unknown, b: unknown) => boolean>> = {
  '==': looseEquals,
  '!=': (a, b) => !looseEquals(a, b),
  '<': (a, b) => orderOf(a, b) < 0,
  '<=': (a, b) => orderOf(a, b) <= 0,
  '>': (a, b) => orderOf(a, b) > 0,
  '>=': (a, b) => orderOf(a, b) >= 0,
  contains: containsValue,
  in: (a, b) => (typeof b === 'string' ? typeof a === 'string' && b.includes(a) : containsValue(b, a)),
  starts_with: startsWith,
  ends_with: endsWith,
};
