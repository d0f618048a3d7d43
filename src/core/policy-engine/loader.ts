import { Document, LineCounter, parseDocument } from 'yaml';
import type { ValidatedPolicy } from './compiled-policy';
import { PolicyLoadError, positionInText } from './errors';
import { isRecord, validatePolicy, validatePolicyList, ValidationContext } from './policy-validator';
import type { PolicyDefinition, PolicyError } from './types';
import { duplicateKeyOffsets } from './yaml-duplicate-keys';
import { YamlLocator } from './yaml-locator';
import { MAX_NESTING, tooDeepOffset } from './yaml-nesting';

const MAX_ALIAS_COUNT = 100;

/** A YAML or JSON source parsed to plain values, with the context that positions its errors. */
export interface ParsedSource {
  readonly value: unknown;
  readonly context: ValidationContext;
}

/** Loads a policies file (`policies:` list, YAML or JSON): shape and every condition checked; throws PolicyLoadError with all errors. */
export function loadPolicyFile(source: string, file: string): PolicyDefinition[] {
  return validatePolicyFile(source, file).map((policy) => policy.definition);
}

/** Loads one policy (YAML or JSON mapping), as sent to `PUT /admin/policies/:name`; throws PolicyLoadError. */
export function loadPolicyDocument(source: string, file: string): PolicyDefinition {
  return validateParsedPolicy(parseSource(source, file));
}

/** Loads proposed policies (validate, simulate, backtest): a policies file, or one policy; throws PolicyLoadError. */
export function loadPolicyFileOrDocument(source: string, file: string): PolicyDefinition[] {
  const parsed = parseSource(source, file);
  if (!isRecord(parsed.value) || !Object.prototype.hasOwnProperty.call(parsed.value, 'policies')) return [validateParsedPolicy(parsed)];
  return validateParsedFile(parsed).map((policy) => policy.definition);
}

function validateParsedPolicy({ value, context }: ParsedSource): PolicyDefinition {
  const policy = validatePolicy(value, context, []);
  if (context.errors.length > 0 || policy === undefined) throw new PolicyLoadError(inSourceOrder(context.errors));
  return policy.definition;
}

function validatePolicyFile(source: string, file: string): ValidatedPolicy[] {
  return validateParsedFile(parseSource(source, file));
}

function validateParsedFile({ value, context }: ParsedSource): ValidatedPolicy[] {
  if (!isRecord(value)) {
    context.report([], "expected a mapping with a 'policies' list", {});
    throw new PolicyLoadError(inSourceOrder(context.errors));
  }
  for (const key of Object.keys(value)) {
    if (key !== 'policies') context.report([key], `unknown key '${key}' (expected policies)`, {}, { key: true });
  }
  if (!Object.prototype.hasOwnProperty.call(value, 'policies')) context.report([], "missing 'policies' list", {});
  const policies = value.policies === undefined ? [] : validatePolicyList(value.policies, context, ['policies']);
  if (context.errors.length > 0) throw new PolicyLoadError(inSourceOrder(context.errors));
  return policies;
}

function inSourceOrder(errors: PolicyError[]): PolicyError[] {
  return [...errors].sort((a, b) => a.line - b.line || a.column - b.column);
}

/**
 * Parses YAML or JSON text to plain values, refusing what policies refuse (deep nesting,
 * duplicate keys, alias bombs); throws PolicyLoadError with every syntax error positioned.
 */
export function parseSource(text: string, file: string): ParsedSource {
  // Editors do not show a byte order mark: counted, it shifted every column of line 1 by one.
  const source = text.startsWith('\ufeff') ? text.slice(1) : text;
  refuseDeepNesting(source, file);
  const lineCounter = new LineCounter();
  const document = parseWithoutStacks(source, lineCounter);
  const context = new ValidationContext(file, new YamlLocator(source, document, lineCounter));
  const duplicates = duplicateKeyOffsets(document).map((offset) => ({ message: 'Map keys must be unique', pos: [offset, offset] as [number, number] }));
  if (document.errors.length > 0 || duplicates.length > 0) {
    throw new PolicyLoadError(inSourceOrder([...document.errors, ...duplicates].map((error) => syntaxError(error, file, lineCounter))));
  }
  return { value: toPlainValue(document, file), context };
}

/**
 * yaml reports each syntax error as an Error, and capturing its stack trace, which no one reads,
 * was two thirds of the time of a body of many errors (1 MiB of `&a ` has 340,000: 2.1 s, 0.6 s
 * without). Parsing is synchronous, so nothing else sees the lowered limit.
 */
function parseWithoutStacks(source: string, lineCounter: LineCounter): Document {
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    // Duplicate keys are found by duplicateKeyOffsets: yaml's uniqueKeys check is quadratic.
    return parseDocument(source, { lineCounter, prettyErrors: false, uniqueKeys: false });
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
}

function refuseDeepNesting(source: string, file: string): void {
  const offset = tooDeepOffset(source);
  if (offset < 0) return;
  const { line, column } = positionInText(source, offset);
  throw new PolicyLoadError([{ file, line, column, message: `YAML nested more than ${MAX_NESTING} levels deep` }]);
}

function toPlainValue(document: Document, file: string): unknown {
  try {
    return document.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    throw new PolicyLoadError([{ file, line: 1, column: 1, message: `YAML error: ${(error as Error).message}` }]);
  }
}

function syntaxError(error: { message: string; pos: [number, number] }, file: string, lineCounter: LineCounter): PolicyError {
  const { line, col } = lineCounter.linePos(error.pos[0]);
  return { file, line, column: col, message: `YAML syntax error: ${error.message}` };
}
