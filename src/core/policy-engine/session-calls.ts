import { caseInsensitiveGlobMatcher, GlobMatcher, globMatcher } from './glob';
import type { SyncTest } from './sync-test';
import type { DecisionInput } from './types';
import type { ValueReader } from './path-readers';

/*
 * `session.called(glob)` and `session.count(glob)` read the session's calls: a record of the
 * actions let through earlier in the session and how often each. Its size is bounded by the
 * session store (distinct actions per session), so a test costs at most one glob match per
 * distinct action, whatever the session's length.
 */

// Where the condition denies, the glob ignores case as `match` globs do (a deny cannot be evaded
// by the case of a path); where it grants, it compares exactly, so folding can add no allow.
function matcherFor(glob: string, widening: boolean): GlobMatcher {
  return widening ? caseInsensitiveGlobMatcher(glob) : globMatcher(glob);
}

/** `session.called(glob)`: a call of the session matched. `widening`: the rule denies when the test holds. */
export function sessionCalledTest(glob: string, widening: boolean): SyncTest {
  const matches = matcherFor(glob, widening);
  return (input) => {
    const calls = input.session?.calls;
    if (calls === undefined) return false;
    for (const action in calls) if (matches(action)) return true;
    return false;
  };
}

/** `session.count(glob)`: how many calls of the session matched (0 without session facts). */
export function sessionCountReader(glob: string): ValueReader {
  const matches = caseInsensitiveGlobMatcher(glob);
  return (input: DecisionInput) => {
    const calls = input.session?.calls;
    if (calls === undefined) return 0;
    let count = 0;
    for (const action in calls) if (matches(action)) count += calls[action];
    return count;
  };
}
