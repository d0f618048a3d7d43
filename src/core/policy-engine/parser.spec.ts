import type { CompareOperator, ConditionAst, LiteralNode } from './ast';
import { spanOf } from './ast';
import { ConditionSyntaxError } from './errors';
import { parseCondition } from './parser';

const path = (root: string, ...segments: string[]): ConditionAst => ({ kind: 'path', root, segments });
const str = (value: string): LiteralNode => ({ kind: 'string', value });
const num = (value: number): LiteralNode => ({ kind: 'number', value });
const bool = (value: boolean): LiteralNode => ({ kind: 'boolean', value });
const cmp = (left: ConditionAst, op: CompareOperator, right: ConditionAst): ConditionAst => ({ kind: 'compare', op, left, right });
const and = (left: ConditionAst, right: ConditionAst): ConditionAst => ({ kind: 'and', left, right });
const or = (left: ConditionAst, right: ConditionAst): ConditionAst => ({ kind: 'or', left, right });
const not = (operand: ConditionAst): ConditionAst => ({ kind: 'not', operand });
const a = path('a');
const b = path('b');
const c = path('c');

describe('parseCondition: literals and paths', () => {
  it.each<[string, ConditionAst]>([
    ['"double"', str('double')],
    ["'single'", str('single')],
    ['"esc \\\\ \\" \\\' \\n \\t"', str('esc \\ " \' \n \t')],
    ['42', num(42)],
    ['-7', num(-7)],
    ['3.5', num(3.5)],
    ['-0.25', num(-0.25)],
    ['true', bool(true)],
    ['false', bool(false)],
    ['[]', { kind: 'list', items: [] }],
    ['["a", 1, true, -2.5]', { kind: 'list', items: [str('a'), num(1), bool(true), num(-2.5)] }],
    ['1m', { kind: 'duration', text: '1m' }],
    ['args.path', path('args', 'path')],
    ['args["x-y"]', path('args', 'x-y')],
    ["args['a b'].c", path('args', 'a b', 'c')],
    ['args.items[0]', path('args', 'items', '0')],
    ['context.and.or.not.in', path('context', 'and', 'or', 'not', 'in')],
    ['agent.trust_tier', path('agent', 'trust_tier')],
    ['action', path('action')],
    ['trusted', path('trusted')],
  ])('%s', (text, expected) => {
    expect(parseCondition(text)).toEqual(expected);
  });
});

describe('parseCondition: operators', () => {
  it.each<[string, CompareOperator]>([
    ['==', '=='],
    ['!=', '!='],
    ['<', '<'],
    ['<=', '<='],
    ['>', '>'],
    ['>=', '>='],
    ['starts_with', 'starts_with'],
    ['ends_with', 'ends_with'],
    ['contains', 'contains'],
    ['in', 'in'],
    ['matches', 'matches'],
  ])('a %s "x"', (text, op) => {
    expect(parseCondition(`a ${text} "x"`)).toEqual(cmp(a, op, str('x')));
  });

  it('parses symbol operators without spaces', () => {
    expect(parseCondition('a>=-1')).toEqual(cmp(a, '>=', num(-1)));
  });

  it.each<[string, ConditionAst]>([
    ['x not in ["a"]', not(cmp(path('x'), 'in', { kind: 'list', items: [str('a')] }))],
    ['x not contains "a"', not(cmp(path('x'), 'contains', str('a')))],
    ['x not matches "a"', not(cmp(path('x'), 'matches', str('a')))],
  ])('negated word operator: %s', (text, expected) => {
    expect(parseCondition(text)).toEqual(expected);
  });

  it.each<[string, ConditionAst]>([
    ['exists(args.x)', { kind: 'call', name: 'exists', args: [path('args', 'x')] }],
    ['rate_limit(per_agent, 10, 1m)', { kind: 'call', name: 'rate_limit', args: [path('per_agent'), num(10), { kind: 'duration', text: '1m' }] }],
    ['f()', { kind: 'call', name: 'f', args: [] }],
    ['f(a or b)', { kind: 'call', name: 'f', args: [or(a, b)] }],
  ])('call %s', (text, expected) => {
    expect(parseCondition(text)).toEqual(expected);
  });
});

describe('parseCondition: precedence', () => {
  it.each<[string, ConditionAst]>([
    ['a or b and c', or(a, and(b, c))],
    ['a and b or c', or(and(a, b), c)],
    ['a or b or c', or(or(a, b), c)],
    ['a and b and c', and(and(a, b), c)],
    ['(a or b) and c', and(or(a, b), c)],
    ['a and (b or c)', and(a, or(b, c))],
    ['not a and b', and(not(a), b)],
    ['not (a and b)', not(and(a, b))],
    ['not not a', not(not(a))],
    ['not a == 1', not(cmp(a, '==', num(1)))],
    ['a == 1 or b != 2 and not c < 3', or(cmp(a, '==', num(1)), and(cmp(b, '!=', num(2)), not(cmp(c, '<', num(3)))))],
    ['(a == 1) == true', cmp(cmp(a, '==', num(1)), '==', bool(true))],
    ['((a))', a],
  ])('%s', (text, expected) => {
    expect(parseCondition(text)).toEqual(expected);
  });
});

describe('parseCondition: syntax errors', () => {
  it.each<[string, number, string]>([
    ['', 0, 'empty condition'],
    ['   ', 3, 'empty condition'],
    ['a ==', 4, 'expected a value, found end of condition'],
    ['a == == b', 5, "expected a value, found '=='"],
    ['a startswith "x"', 2, "unknown operator 'startswith' (expected ==, !=, <, <=, >, >=, starts_with, ends_with, contains, in, matches, and, or)"],
    ['a == 1 b', 7, "unknown operator 'b' (expected ==, !=, <, <=, >, >=, starts_with, ends_with, contains, in, matches, and, or)"],
    ['a == 1 == 2', 7, "comparisons cannot be chained: combine them with 'and'"],
    ['(a == 1', 7, "expected ')', found end of condition"],
    ['a == 1)', 6, "unexpected ')'"],
    ['a and', 5, 'expected a value, found end of condition'],
    ['and a', 0, "expected a value, found 'and'"],
    ['args.', 5, "expected a field name after '.'"],
    ['args.1', 5, "expected a field name after '.'"],
    ['args[x]', 5, 'expected a quoted field name or a non-negative integer index inside [ ]'],
    ['args[-1]', 5, 'expected a quoted field name or a non-negative integer index inside [ ]'],
    ['args["x"', 8, "expected ']', found end of condition"],
    ['x in [a]', 6, 'list items must be strings, numbers, true or false'],
    ['x in [1,]', 8, 'list items must be strings, numbers, true or false'],
    ['x in [1 2]', 8, "expected ',' or ']' in the list, found '2'"],
    ['f(a b)', 4, "unknown operator 'b' (expected ==, !=, <, <=, >, >=, starts_with, ends_with, contains, in, matches, and, or)"],
    ['f(a,', 4, 'expected a value, found end of condition'],
    ['f(a', 3, "expected ',' or ')' in the argument list, found end of condition"],
    ['"x" "y"', 4, 'unexpected \'"y"\''],
    ['a == 1\n  or && b', 12, "unexpected '&': write 'and'"],
  ])('%j fails at offset %d', (text, offset, message) => {
    const error = syntaxError(text);
    expect(error.message).toBe(message);
    expect(error.offset).toBe(offset);
  });

  it('reports 1-based line and column', () => {
    const error = syntaxError('a == 1 and\n   b ==');
    expect(error).toMatchObject({ offset: 18, line: 2, column: 8 });
  });

  it('limits nesting depth', () => {
    const text = `${'('.repeat(70)}a${')'.repeat(70)}`;
    expect(syntaxError(text)).toMatchObject({ offset: 64, message: 'expression nested more than 64 levels deep' });
    expect(syntaxError(`${'not '.repeat(70)}a`).message).toBe('expression nested more than 64 levels deep');
  });
});

describe('parseCondition: spans', () => {
  it('records where nodes start and path segments begin', () => {
    const ast = parseCondition('x == 1 and args["a-b"].c');
    expect(ast.kind).toBe('and');
    if (ast.kind !== 'and') return;
    expect(spanOf(ast)).toEqual({ start: 0, end: 24 });
    expect(spanOf(ast.right)).toEqual({ start: 11, end: 24, segments: [15, 23] });
  });
});

function syntaxError(text: string): ConditionSyntaxError {
  try {
    parseCondition(text);
  } catch (error) {
    if (error instanceof ConditionSyntaxError) return error;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(text)} to fail`);
}
