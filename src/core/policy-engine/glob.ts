/** A compiled `*`-glob. */
export type GlobMatcher = (subject: string) => boolean;

const UNSUPPORTED_GLOB_CHARS = /[?[\]{}]/;
const ASCII = /^[\0-\x7f]*$/;

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

/**
 * A glob whose letters match in either case (`*:admin*` accepts `read:Admin/users`), for policy
 * `match` globs: matching there only brings a policy into a decision, so a wider match can add a
 * deny but never an allow, and a deny cannot be evaded by changing the case of a path.
 * Equivalent to `globMatcher(glob.toLowerCase())(subject.toLowerCase())`; a glob with a fixed
 * start or end compares those characters in place while they are ASCII, without a lower-cased
 * copy of the subject (this runs for every policy on every decision).
 */
export function caseInsensitiveGlobMatcher(glob: string): GlobMatcher {
  const lowered = glob.toLowerCase();
  const folded = globMatcher(lowered);
  if (folded === matchAnything) return matchAnything;
  const slow: GlobMatcher = (subject) => folded(subject.toLowerCase());
  const parts = lowered.split('*');
  if (parts.length > 2 || !ASCII.test(lowered)) return slow;
  const prefix = parts[0];
  const suffix = parts.length === 2 ? parts[1] : '';
  const exact = parts.length === 1;
  const minLength = prefix.length + suffix.length;
  return (subject) => {
    if (exact ? subject.length !== minLength : subject.length < minLength) return ASCII.test(subject) ? false : slow(subject);
    const start = asciiFoldedEquals(subject, 0, prefix);
    if (start === undefined) return slow(subject);
    if (!start) return false;
    const end = asciiFoldedEquals(subject, subject.length - suffix.length, suffix);
    return end === undefined ? slow(subject) : end;
  };
}

/**
 * Whether `subject` holds `lowered` (lower-case ASCII) at `at`, ASCII letters in any case;
 * undefined at a non-ASCII character, whose lower case may be ASCII (U+212A is k) or longer.
 */
function asciiFoldedEquals(subject: string, at: number, lowered: string): boolean | undefined {
  for (let i = 0; i < lowered.length; i++) {
    const code = subject.charCodeAt(at + i);
    if (code > 0x7f) return undefined;
    const folded = code >= 0x41 && code <= 0x5a ? code + 0x20 : code;
    if (folded !== lowered.charCodeAt(i)) return false;
  }
  return true;
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
