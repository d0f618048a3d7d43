/**
 * Comparisons against a literal, specialised at compile time so the hot path does the least work:
 * e.g. `== "read"` with a non-numeric string literal is a single `===`.
 */
import type { CompareOperator } from './ast';
import type { LiteralValue } from './ir';
import { containsValue, endsWith, looseEquals, numericValue, orderOf, startsWith } from './operators';

/** A test of one run-time value. */
export type ValueTest = (value: unknown) => boolean;

const never: ValueTest = () => false;

/** `value <op> literal`. */
export function literalTest(op: Exclude<CompareOperator, 'matches'>, literal: LiteralValue): ValueTest {
  switch (op) {
    case '==':
      return equalsLiteral(literal);
    case '!=': {
      const equals = equalsLiteral(literal);
      return (value) => !equals(value);
    }
    case '<':
    case '<=':
    case '>':
    case '>=':
      return orderLiteral(op, literal);
    case 'contains':
      return containsLiteral(literal);
    case 'in':
      return inLiteral(literal);
    case 'starts_with':
      return typeof literal === 'string' ? (value) => typeof value === 'string' && value.startsWith(literal) : never;
    case 'ends_with':
      return typeof literal === 'string' ? (value) => typeof value === 'string' && value.endsWith(literal) : never;
  }
}

/** `literal <op> value`, turned around where the operator allows. */
export function reversedLiteralTest(op: Exclude<CompareOperator, 'matches'>, literal: LiteralValue): ValueTest {
  switch (op) {
    case '==':
    case '!=':
      return literalTest(op, literal);
    case '<':
      return literalTest('>', literal);
    case '<=':
      return literalTest('>=', literal);
    case '>':
      return literalTest('<', literal);
    case '>=':
      return literalTest('<=', literal);
    case 'in':
      return containsLiteral(literal);
    case 'contains':
      return (value) => containsValue(literal, value);
    case 'starts_with':
      return (value) => startsWith(literal, value);
    case 'ends_with':
      return (value) => endsWith(literal, value);
  }
}

function isNumericString(literal: LiteralValue): boolean {
  return typeof literal === 'string' && !Number.isNaN(numericValue(literal));
}

function equalsLiteral(literal: LiteralValue): ValueTest {
  if (typeof literal === 'boolean' || (typeof literal === 'string' && !isNumericString(literal))) {
    return (value) => value === literal;
  }
  if (typeof literal === 'number') {
    return (value) => value === literal || (typeof value === 'string' && numericValue(value) === literal);
  }
  if (typeof literal === 'string') {
    const number = numericValue(literal);
    return (value) => value === literal || value === number;
  }
  return (value) => looseEquals(value, literal);
}

function orderLiteral(op: '<' | '<=' | '>' | '>=', literal: LiteralValue): ValueTest {
  if (typeof literal === 'number') {
    switch (op) {
      case '<':
        return (value) => (typeof value === 'number' ? value < literal : typeof value === 'string' && numericValue(value) < literal);
      case '<=':
        return (value) => (typeof value === 'number' ? value <= literal : typeof value === 'string' && numericValue(value) <= literal);
      case '>':
        return (value) => (typeof value === 'number' ? value > literal : typeof value === 'string' && numericValue(value) > literal);
      case '>=':
        return (value) => (typeof value === 'number' ? value >= literal : typeof value === 'string' && numericValue(value) >= literal);
    }
  }
  switch (op) {
    case '<':
      return (value) => orderOf(value, literal) < 0;
    case '<=':
      return (value) => orderOf(value, literal) <= 0;
    case '>':
      return (value) => orderOf(value, literal) > 0;
    case '>=':
      return (value) => orderOf(value, literal) >= 0;
  }
}

function containsLiteral(literal: LiteralValue): ValueTest {
  if (typeof literal === 'string' && !isNumericString(literal)) {
    // For a non-numeric string, `==` is `===`, so Array.prototype.includes is exact.
    return (value) => (typeof value === 'string' ? value.includes(literal) : Array.isArray(value) && value.includes(literal));
  }
  return (value) => containsValue(value, literal);
}

function inLiteral(literal: LiteralValue): ValueTest {
  if (typeof literal === 'string') return (value) => typeof value === 'string' && literal.includes(value);
  if (!Array.isArray(literal)) return never;
  return listMembership(literal);
}

/** `value in [..]` with the same equality as `==`, using sets built once. */
export function listMembership(items: readonly (string | number | boolean)[]): ValueTest {
  const strings = new Set<string>();
  const numbers = new Set<number>();
  const numericStrings = new Set<number>();
  const booleans = new Set<boolean>();
  for (const item of items) {
    if (typeof item === 'string') {
      strings.add(item);
      const number = numericValue(item);
      if (!Number.isNaN(number)) numericStrings.add(number);
    } else if (typeof item === 'number') {
      numbers.add(item);
    } else {
      booleans.add(item);
    }
  }
  return (value) => {
    if (typeof value === 'string') return strings.has(value) || (numbers.size > 0 && numbers.has(numericValue(value)));
    if (typeof value === 'number') return numbers.has(value) || numericStrings.has(value);
    return typeof value === 'boolean' && booleans.has(value);
  };
}
