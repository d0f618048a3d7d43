import type { PolicyError } from './types';

/** A condition that does not parse; offset is 0-based, line and column 1-based, within the condition text. */
export class ConditionSyntaxError extends Error {
  override readonly name = 'ConditionSyntaxError';
  readonly offset: number;
  readonly line: number;
  readonly column: number;

  constructor(message: string, text: string, offset: number) {
    super(message);
    this.offset = offset;
    const position = positionInText(text, offset);
    this.line = position.line;
    this.column = position.column;
  }
}

/** Every problem found while loading or compiling policies, all of them, not just the first. */
export class PolicyLoadError extends Error {
  override readonly name = 'PolicyLoadError';
  readonly errors: PolicyError[];

  constructor(errors: PolicyError[]) {
    super(summarize(errors));
    this.errors = errors;
  }
}

/** `file:line:column: policy "p", rule "r": message`, the form used in logs and CLI output. */
export function formatPolicyError(error: PolicyError): string {
  const where = [
    error.policy === undefined ? undefined : `policy "${error.policy}"`,
    error.rule === undefined ? undefined : `rule "${error.rule}"`,
  ].filter((part) => part !== undefined);
  const context = where.length > 0 ? `${where.join(', ')}: ` : '';
  return `${error.file}:${error.line}:${error.column}: ${context}${error.message}`;
}

/** 1-based line and column of a 0-based offset; only `\n` breaks lines. */
export function positionInText(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(offset, text.length);
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

function summarize(errors: readonly PolicyError[]): string {
  if (errors.length === 0) return 'invalid policies';
  const first = formatPolicyError(errors[0]);
  return errors.length === 1 ? first : `${first} (and ${errors.length - 1} more errors)`;
}
