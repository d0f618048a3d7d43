import type { CompareOperator } from './ast';
import type { LiteralValue } from './ir';
import { numericValue } from './operators';

/** Whether a present value is of a kind the comparison can judge. */
export type TypeFit = (value: unknown) => boolean;

/**
 * What a caller-supplied value (`args.*`, `context.*`) must be for `value <op> literal` to judge
 * it, or undefined when any value will do. A value of another kind is a mismatch, which a rule
 * reads the way that denies (docs/policies.md "Values of the wrong type"): a list where a number
 * is expected (`{"amount":[5000]}`), an object, a number written with trailing text (`"5000abc"`,
 * which many upstreams parse as 5000) must never slip past a deny rule as "not greater than".
 */
export function typeFitOf(op: CompareOperator, literal: LiteralValue, reversed = false): TypeFit | undefined {
  if (reversed) return reversedFitOf(op, literal);
  switch (op) {
    case '<':
    case '<=':
    case '>':
    case '>=':
      return typeof literal === 'number' ? isNumberLike : isString;
    case 'starts_with':
    case 'ends_with':
    case 'matches':
      return isString;
    case 'contains':
      return isStringOrList;
    case '==':
    case '!=':
      return Array.isArray(literal) ? undefined : isScalar;
    case 'in':
      return isScalar;
  }
}

/** The same for `literal <op> value`. */
function reversedFitOf(op: CompareOperator, literal: LiteralValue): TypeFit | undefined {
  switch (op) {
    case 'in':
      return isStringOrList;
    case 'contains':
      return isScalar;
    default:
      return typeFitOf(op, literal);
  }
}

function isNumberLike(value: unknown): boolean {
  return (typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && !Number.isNaN(numericValue(value)));
}

function isString(value: unknown): boolean {
  return typeof value === 'string';
}

function isStringOrList(value: unknown): boolean {
  return typeof value === 'string' || Array.isArray(value);
}

function isScalar(value: unknown): boolean {
  return value === null || typeof value !== 'object';
}
