import fc from 'fast-check';
import type { CompareOperator, ConditionAst, LiteralNode } from './ast';
import { ConditionSyntaxError } from './errors';
import { parseCondition } from './parser';
import { isRootWord, printCondition, quoteString } from './printer';

describe('printCondition', () => {
  it.each([
    ['a or b and c', 'a or b and c'],
    ['(a or b) and c', '(a or b) and c'],
    ['a or (b or c)', 'a or (b or c)'],
    ['not (a and b)', 'not (a and b)'],
    ['(not a) == true', '(not a) == true'],
    ["args['x-y'] == 'it\\'s'", 'args["x-y"] == "it\'s"'],
    ['args.items[0] in [1, -2.5, "a", true]', 'args.items["0"] in [1, -2.5, "a", true]'],
    ['rate_limit(per_agent, 10, 1m)', 'rate_limit(per_agent, 10, 1m)'],
    ['x not in ["a"]', 'not x in ["a"]'],
  ])('%s prints as %s', (text, printed) => {
    expect(printCondition(parseCondition(text))).toBe(printed);
  });

  it('escapes strings so they read back', () => {
    expect(quoteString('a"b\\c\nd\te\'')).toBe('"a\\"b\\\\c\\nd\\te\'"');
  });
});

const OPERATORS: CompareOperator[] = ['==', '!=', '<', '<=', '>', '>=', 'starts_with', 'ends_with', 'contains', 'in', 'matches'];
const word = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,7}$/);
const rootWord = word.filter(isRootWord);
const segment = fc.oneof(word, fc.string({ maxLength: 6 }), fc.string({ unit: 'binary', maxLength: 4 }));
const literal: fc.Arbitrary<LiteralNode> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 8 }).map((value) => ({ kind: 'string' as const, value })),
  fc.integer({ min: -1_000_000, max: 1_000_000 }).map((value) => ({ kind: 'number' as const, value })),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => ({ kind: 'number' as const, value })),
  fc.boolean().map((value) => ({ kind: 'boolean' as const, value })),
);

const { condition } = fc.letrec<{ condition: ConditionAst }>((tie) => ({
  condition: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    literal,
    fc.record({ kind: fc.constant('path' as const), root: rootWord, segments: fc.array(segment, { maxLength: 3 }) }),
    fc.record({ kind: fc.constant('list' as const), items: fc.array(literal, { maxLength: 3 }) }),
    fc
      .tuple(fc.nat(9999), fc.constantFrom('s', 'm', 'h', 'd', 'ms', 'x'))
      .map(([count, unit]) => ({ kind: 'duration' as const, text: `${count}${unit}` })),
    fc.record({ kind: fc.constant('call' as const), name: rootWord, args: fc.array(tie('condition'), { maxLength: 3 }) }),
    fc.record({ kind: fc.constant('compare' as const), op: fc.constantFrom(...OPERATORS), left: tie('condition'), right: tie('condition') }),
    fc.record({ kind: fc.constant('not' as const), operand: tie('condition') }),
    fc.record({ kind: fc.constantFrom('and' as const, 'or' as const), left: tie('condition'), right: tie('condition') }),
  ),
}));

const conditionish = fc
  .array(
    fc.constantFrom('args', '.', 'path', '==', '!=', '<', '>=', '"x"', "'y'", '(', ')', '[', ']', ',', '1', '-', '-2.5', '1m', 'in',
      'contains', 'not', 'and', 'or', 'matches', ' ', '"', "'", '\\', '\n', 'rate_limit', 'exists', '=', '&', 'é', '\u{1F600}', '1e', 'e5'),
    { maxLength: 20 },
  )
  .map((parts) => parts.join(''));

describe('parse/print properties', () => {
  it('parseCondition(printCondition(ast)) equals ast', () => {
    fc.assert(
      fc.property(condition, (ast) => {
        expect(parseCondition(printCondition(ast))).toEqual(ast);
      }),
      { numRuns: 2000 },
    );
  });

  it('parseCondition on any text returns or throws a ConditionSyntaxError positioned inside the text', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), conditionish), (text) => {
        try {
          parseCondition(text);
        } catch (error) {
          expect(error).toBeInstanceOf(ConditionSyntaxError);
          const { offset, line, column } = error as ConditionSyntaxError;
          expect(offset).toBeGreaterThanOrEqual(0);
          expect(offset).toBeLessThanOrEqual(text.length);
          const before = text.slice(0, offset).split('\n');
          expect(line).toBe(before.length);
          expect(column).toBe(before[before.length - 1].length + 1);
        }
      }),
      { numRuns: 5000 },
    );
  });
});
