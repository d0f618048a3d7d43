import { ConditionAst, KEYWORDS } from './ast';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

// Binding strength; a child weaker than its slot requires gets parentheses.
const PRECEDENCE: Readonly<Record<ConditionAst['kind'], number>> = {
  or: 1,
  and: 2,
  not: 3,
  compare: 4,
  path: 5,
  string: 5,
  number: 5,
  boolean: 5,
  list: 5,
  duration: 5,
  call: 5,
};

/** Prints a condition so that parseCondition(printCondition(ast)) deep-equals ast. */
export function printCondition(ast: ConditionAst): string {
  return print(ast, 0);
}

function print(node: ConditionAst, minimum: number): string {
  const text = printBare(node);
  return PRECEDENCE[node.kind] < minimum ? `(${text})` : text;
}

function printBare(node: ConditionAst): string {
  switch (node.kind) {
    case 'or':
      return `${print(node.left, 1)} or ${print(node.right, 2)}`;
    case 'and':
      return `${print(node.left, 2)} and ${print(node.right, 3)}`;
    case 'not':
      return `not ${print(node.operand, 3)}`;
    case 'compare':
      return `${print(node.left, 5)} ${node.op} ${print(node.right, 5)}`;
    case 'path':
      return node.root + node.segments.map(printSegment).join('');
    case 'string':
      return quoteString(node.value);
    case 'number':
      return Object.is(node.value, -0) ? '-0' : String(node.value);
    case 'boolean':
      return String(node.value);
    case 'list':
      return `[${node.items.map((item) => printBare(item)).join(', ')}]`;
    case 'duration':
      return node.text;
    case 'call':
      return `${node.name}(${node.args.map((arg) => print(arg, 0)).join(', ')})`;
  }
}

function printSegment(segment: string): string {
  return IDENTIFIER.test(segment) ? `.${segment}` : `[${quoteString(segment)}]`;
}

/** A double-quoted condition string literal for any text. */
export function quoteString(value: string): string {
  return `"${value.replace(/[\\"\n\t]/g, escapeChar)}"`;
}

function escapeChar(ch: string): string {
  if (ch === '\n') return '\\n';
  if (ch === '\t') return '\\t';
  return `\\${ch}`;
}

/** True when a word can stand as a path root (not a keyword, literal or operator word). */
export function isRootWord(word: string): boolean {
  return IDENTIFIER.test(word) && !KEYWORDS.has(word);
}
