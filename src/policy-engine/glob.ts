/** A compiled `*`-glob. */
export type GlobMatcher = (subject: string) => boolean;

const UNSUPPORTED_GLOB_CHARS = /[?[\]{}]/;

/** Why a glob is unusable (empty, or uses wildcard syntax other than `*`), else undefined. */
export function globProblem(glob: string): string | undefined {
  if (glob.length === 0) return 'a glob must not be empty';
  const bad = UNSUPPORTED_GLOB_CHARS.exec(glob);
  if (bad !== null) return `unsupported glob character '${bad[0]}': only * is a wildcard`;
  return undefined;
}

const matchAnything: GlobMatcher = () => true;

/** Compiles a glob where `*` matches any run of characters (including none); other characters match themselves. */
export function globMatcher(glob: string): GlobMatcher {
  const parts = glob.split('*');
  if (parts.length === 1) return (subject) => subject === glob;
  if (parts.every((part) => part === '')) return matchAnything;
  if (parts.length === 2) return twoPartMatcher(parts[0], parts[1]);
  if (parts.length === 3 && parts[0] === '' && parts[2] === '') {
    const infix = parts[1];
    return (subject) => subject.includes(infix);
  }
  return generalMatcher(parts);
}

function twoPartMatcher(prefix: string, suffix: string): GlobMatcher {
  if (suffix === '') return (subject) => subject.startsWith(prefix);
  if (prefix === '') return (subject) => subject.endsWith(suffix);
  const minLength = prefix.length + suffix.length;
  return (subject) => subject.length >= minLength && subject.startsWith(prefix) && subject.endsWith(suffix);
}

// With `*` as the only wildcard, taking each middle part at its leftmost position is exact:
// no backtracking is ever needed, so matching is linear.
function generalMatcher(parts: readonly string[]): GlobMatcher {
  const prefix = parts[0];
  const suffix = parts[parts.length - 1];
  const middle = parts.slice(1, -1).filter((part) => part !== '');
  const minLength = prefix.length + suffix.length;
  return (subject) => {
    if (subject.length < minLength || !subject.startsWith(prefix) || !subject.endsWith(suffix)) return false;
    let from = prefix.length;
    const limit = subject.length - suffix.length;
    for (let i = 0; i < middle.length; i++) {
      const at = subject.indexOf(middle[i], from);
      if (at < 0 || at + middle[i].length > limit) return false;
      from = at + middle[i].length;
    }
    return true;
  };
}
