import { CompiledPolicy } from './compiled-policy';
import { positionInText, PolicyLoadError } from './errors';
import { isRecord, SourceLocator, SourcePath, validatePolicyList, ValidationContext } from './policy-validator';
import { PolicySet } from './policy-set';
import type { PolicyDefinition } from './types';

/** Options of compilePolicies. */
export interface CompileOptions {
  /** Organization id: prefixes every rate-limit key except `global` ones. */
  readonly namespace?: string;
  /** Named in errors; defaults to `<policies>`. */
  readonly file?: string;
}

/**
 * Validates and compiles policy definitions (e.g. from the database) into a PolicySet; throws
 * PolicyLoadError. With no YAML source, condition errors carry the line and column inside the
 * condition text, and other errors line 0, column 0.
 */
export function compilePolicies(defs: readonly PolicyDefinition[], options: CompileOptions = {}): PolicySet {
  const context = new ValidationContext(options.file ?? '<policies>', new ObjectLocator(defs));
  const validated = validatePolicyList(defs, context, []);
  if (context.errors.length > 0) throw new PolicyLoadError(context.errors);
  return new PolicySet(
    validated.map((policy) => new CompiledPolicy(policy, options.namespace)),
    options.namespace,
  );
}

class ObjectLocator implements SourceLocator {
  constructor(private readonly root: unknown) {}

  locate(path: SourcePath, where?: { key?: boolean; inner?: number }): { line: number; column: number } {
    const value = path.reduce<unknown>((node, segment) => childOf(node, segment), this.root);
    if (where?.inner !== undefined && typeof value === 'string') return positionInText(value, where.inner);
    return { line: 0, column: 0 };
  }
}

function childOf(node: unknown, segment: string | number): unknown {
  if (Array.isArray(node) && typeof segment === 'number') return node[segment];
  if (isRecord(node) && typeof segment === 'string' && Object.prototype.hasOwnProperty.call(node, segment)) return node[segment];
  return undefined;
}
