import { globMatcher, globProblem } from '../policy-engine/glob';
import type { Decision } from '../policy-engine/types';

/** The policy name a scope denial carries in responses and the audit trail. */
export const DELEGATION_SCOPE_POLICY = 'delegation-scope';

/** Most globs one scope may hold, and the longest glob. */
export const MAX_SCOPE_GLOBS = 50;
export const MAX_SCOPE_GLOB_LENGTH = 200;

/** What a scope check reads of a decision request. */
export interface ScopedRequest {
  action: string;
  derivedAction?: string;
}

/**
 * True when one of the scope's globs matches the action. Case-sensitive, unlike policy `match`
 * globs (docs/policies.md): a scope is an allow-list, so an action in another case is outside it
 * and denied, where folding case would let `read:docs/*` reach `read:DOCS/x` on an upstream that
 * tells them apart.
 */
export function scopeAllows(scope: readonly string[], action: string): boolean {
  return scope.some((glob) => globMatcher(glob)(action));
}

/**
 * True when every action `glob` matches is allowed by `parent`. Tested by matching the glob's
 * own text against the parent's globs: a parent literal cannot consume the child's `*` (a
 * parent `*` is never a literal), so each child wildcard lies inside a parent wildcard and
 * stays matched whatever it expands to. Sound, and conservative for unions of parent globs.
 */
export function globWithin(glob: string, parent: readonly string[]): boolean {
  return scopeAllows(parent, glob);
}

/** Why a requested scope cannot be granted under `parent` (undefined: no parent limit), else undefined. */
export function scopeProblem(requested: readonly string[], parent: readonly string[] | undefined): string | undefined {
  if (requested.length === 0) return 'scope must name at least one action glob';
  for (const glob of requested) {
    const problem = globProblem(glob);
    if (problem !== undefined) return `scope glob ${JSON.stringify(glob)}: ${problem}`;
    if (parent !== undefined && !globWithin(glob, parent)) {
      return `scope glob ${JSON.stringify(glob)} is not within the delegating token's scope (${parent.join(', ')}): each hop can only narrow`;
    }
  }
  return undefined;
}

/**
 * The fixed denial of a request outside a delegated token's scope, else undefined. The caller
 * may name its action (`X-Service-Action`, a PDP request's `action`), so the action derived
 * from the request itself must be in scope as well: a declared action cannot widen the token.
 */
export function scopeDenial(scope: readonly string[] | undefined, request: ScopedRequest): Decision | undefined {
  if (scope === undefined) return undefined;
  const outside = actionsOf(request).find((action) => !scopeAllows(scope, action));
  if (outside === undefined) return undefined;
  return {
    effect: 'deny',
    policy: DELEGATION_SCOPE_POLICY,
    rule: null,
    reason: `action ${outside} is outside the delegated scope (${scope.length === 0 ? 'empty' : scope.join(', ')})`,
  };
}

function actionsOf(request: ScopedRequest): string[] {
  const derived = request.derivedAction;
  return derived === undefined || derived === request.action ? [request.action] : [request.action, derived];
}
