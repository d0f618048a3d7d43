import {
  CompareOperator,
  ConditionAst,
  KEYWORDS,
  LiteralNode,
  PathNode,
  SYMBOL_OPERATORS,
  WORD_OPERATORS,
  spanOf,
  withSpan,
} from './ast';
import { ConditionSyntaxError } from './errors';
import { Token, tokenize } from './lexer';

const MAX_NESTING = 64;
const WORD_OPERATOR_SET: ReadonlySet<string> = new Set(WORD_OPERATORS);
const OPERATOR_LIST = [...SYMBOL_OPERATORS, ...WORD_OPERATORS].join(', ');
const SYMBOL_OPERATOR_SET: ReadonlySet<string> = new Set(SYMBOL_OPERATORS);

/** Parses a condition expression; throws ConditionSyntaxError (never anything else) on bad input. */
export function parseCondition(text: string): ConditionAst {
  return new ConditionParser(text).parse();
}

/**
 * Recursive descent, lowest precedence first: or < and < not < comparison < primary.
 * Comparisons do not chain; `x not in y` (and the other word operators) is sugar for `not (x in y)`.
 */
class ConditionParser {
  private readonly tokens: Token[];
  private index = 0;
  private depth = 0;

  constructor(private readonly text: string) {
    this.tokens = tokenize(text);
  }

  parse(): ConditionAst {
    if (this.peek().kind === 'eof') throw this.error('empty condition', this.peek());
    const ast = this.parseOr();
    const next = this.peek();
    if (next.kind !== 'eof') throw this.error(`unexpected ${describe(next)}`, next);
    return ast;
  }

  private parseOr(): ConditionAst {
    let left = this.parseAnd();
    while (this.atWord('or')) {
      this.index++;
      const right = this.parseAnd();
      left = this.binary('or', left, right);
    }
    return left;
  }

  private parseAnd(): ConditionAst {
    let left = this.parseNot();
    while (this.atWord('and')) {
      this.index++;
      const right = this.parseNot();
      left = this.binary('and', left, right);
    }
    return left;
  }

  private parseNot(): ConditionAst {
    if (!this.atWord('not')) return this.parseComparison();
    const start = this.next();
    this.enter(start);
    const operand = this.parseNot();
    this.depth--;
    return withSpan({ kind: 'not', operand }, { start: start.start, end: this.previousEnd() });
  }

  private parseComparison(): ConditionAst {
    const startToken = this.peek();
    const left = this.parsePrimary();
    this.rejectUnknownOperator();
    const negated = this.atWord('not') && this.isWordOperator(this.peekAt(1));
    if (negated) this.index++;
    if (!this.isOperator(this.peek())) return left;
    const op = this.next().text as CompareOperator;
    const right = this.parsePrimary();
    this.rejectUnknownOperator();
    if (this.isOperator(this.peek())) {
      throw this.error("comparisons cannot be chained: combine them with 'and'", this.peek());
    }
    const span = { start: startToken.start, end: this.previousEnd() };
    const comparison = withSpan({ kind: 'compare', op, left, right }, span);
    return negated ? withSpan({ kind: 'not', operand: comparison }, span) : comparison;
  }

  // After an operand only an operator, and/or, a closing bracket or the end may follow; a plain
  // word there is almost always a misspelt operator.
  private rejectUnknownOperator(): void {
    const token = this.peek();
    if (token.kind === 'word' && !KEYWORDS.has(token.text)) {
      throw this.error(`unknown operator '${token.text}' (expected ${OPERATOR_LIST}, and, or)`, token);
    }
  }

  private parsePrimary(): ConditionAst {
    const token = this.peek();
    switch (token.kind) {
      case 'string':
        this.index++;
        return withSpan({ kind: 'string', value: token.value as string }, token);
      case 'number':
        this.index++;
        return withSpan({ kind: 'number', value: token.value as number }, token);
      case 'duration':
        this.index++;
        return withSpan({ kind: 'duration', text: token.text }, token);
      case 'word':
        return this.parseWord(token);
      case 'punct':
        return this.parsePunctuation(token);
      default:
        throw this.error(`expected a value, found ${describe(token)}`, token);
    }
  }

  private parsePunctuation(token: Token): ConditionAst {
    if (token.text === '[') return this.parseList();
    if (token.text !== '(') throw this.error(`expected a value, found ${describe(token)}`, token);
    this.enter(token);
    this.index++;
    const inner = this.parseOr();
    this.expectPunct(')', "expected ')'");
    this.depth--;
    return inner;
  }

  private parseWord(token: Token): ConditionAst {
    if (token.text === 'true' || token.text === 'false') {
      this.index++;
      return withSpan({ kind: 'boolean', value: token.text === 'true' }, token);
    }
    if (KEYWORDS.has(token.text)) throw this.error(`expected a value, found ${describe(token)}`, token);
    this.index++;
    if (this.atPunct('(')) return this.parseCall(token, token.text);
    const path = this.parsePath(token);
    // A method of a path (`session.called("read:*")`, `session.labels.has("x")`) is a call named by the dotted path.
    if (this.atPunct('(') && path.segments.length > 0) return this.parseCall(token, [path.root, ...path.segments].join('.'));
    return path;
  }

  private parseCall(name: Token, callee: string): ConditionAst {
    this.enter(name);
    this.index++;
    const args: ConditionAst[] = [];
    if (!this.atPunct(')')) {
      args.push(this.parseOr());
      while (this.atPunct(',')) {
        this.index++;
        args.push(this.parseOr());
      }
    }
    this.expectPunct(')', "expected ',' or ')' in the argument list");
    this.depth--;
    return withSpan({ kind: 'call', name: callee, args }, { start: name.start, end: this.previousEnd() });
  }

  private parsePath(root: Token): PathNode {
    const segments: string[] = [];
    const starts: number[] = [];
    for (;;) {
      if (this.atPunct('.')) {
        this.index++;
        const field = this.peek();
        if (field.kind !== 'word') throw this.error("expected a field name after '.'", field);
        this.index++;
        segments.push(field.text);
        starts.push(field.start);
      } else if (this.atPunct('[')) {
        const open = this.next();
        segments.push(this.parseIndex());
        starts.push(open.start);
        this.expectPunct(']', "expected ']'");
      } else {
        break;
      }
    }
    const span = { start: root.start, end: this.previousEnd(), segments: starts };
    return withSpan({ kind: 'path', root: root.text, segments }, span);
  }

  private parseIndex(): string {
    const token = this.peek();
    if (token.kind === 'string') {
      this.index++;
      return token.value as string;
    }
    if (token.kind === 'number' && Number.isSafeInteger(token.value) && /^[0-9]+$/.test(token.text)) {
      this.index++;
      return token.text;
    }
    throw this.error('expected a quoted field name or a non-negative integer index inside [ ]', token);
  }

  private parseList(): ConditionAst {
    const open = this.next();
    const items: LiteralNode[] = [];
    if (!this.atPunct(']')) {
      items.push(this.parseListItem());
      while (this.atPunct(',')) {
        this.index++;
        items.push(this.parseListItem());
      }
    }
    this.expectPunct(']', "expected ',' or ']' in the list");
    return withSpan({ kind: 'list', items }, { start: open.start, end: this.previousEnd() });
  }

  private parseListItem(): LiteralNode {
    const token = this.peek();
    const isLiteral =
      token.kind === 'string' || token.kind === 'number' || (token.kind === 'word' && (token.text === 'true' || token.text === 'false'));
    if (!isLiteral) throw this.error('list items must be strings, numbers, true or false', token);
    return this.parsePrimary() as LiteralNode;
  }

  private binary(kind: 'and' | 'or', left: ConditionAst, right: ConditionAst): ConditionAst {
    return withSpan({ kind, left, right }, { start: this.startOf(left), end: this.previousEnd() });
  }

  private startOf(node: ConditionAst): number {
    // The leftmost token of a binary chain is where its first operand began.
    let first: ConditionAst = node;
    while (first.kind === 'or' || first.kind === 'and') first = first.left;
    return spanOf(first)?.start ?? 0;
  }

  private enter(token: Token): void {
    this.depth++;
    if (this.depth > MAX_NESTING) throw this.error(`expression nested more than ${MAX_NESTING} levels deep`, token);
  }

  private isOperator(token: Token): boolean {
    if (token.kind === 'operator') return SYMBOL_OPERATOR_SET.has(token.text);
    return this.isWordOperator(token);
  }

  private isWordOperator(token: Token): boolean {
    return token.kind === 'word' && WORD_OPERATOR_SET.has(token.text);
  }

  private expectPunct(text: string, message: string): void {
    const token = this.peek();
    if (token.kind !== 'punct' || token.text !== text) {
      throw this.error(`${message}, found ${describe(token)}`, token);
    }
    this.index++;
  }

  private atWord(word: string): boolean {
    const token = this.peek();
    return token.kind === 'word' && token.text === word;
  }

  private atPunct(text: string): boolean {
    const token = this.peek();
    return token.kind === 'punct' && token.text === text;
  }

  private peek(): Token {
    return this.tokens[this.index];
  }

  private peekAt(ahead: number): Token {
    return this.tokens[Math.min(this.index + ahead, this.tokens.length - 1)];
  }

  private next(): Token {
    return this.tokens[this.index++];
  }

  private previousEnd(): number {
    return this.tokens[this.index - 1]?.end ?? 0;
  }

  private error(message: string, token: Token): ConditionSyntaxError {
    return new ConditionSyntaxError(message, this.text, token.start);
  }
}

function describe(token: Token): string {
  if (token.kind === 'eof') return 'end of condition';
  const text = token.text.length > 30 ? `${token.text.slice(0, 30)}…` : token.text;
  return `'${text}'`;
}
