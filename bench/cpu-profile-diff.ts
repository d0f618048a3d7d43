/**
 * Two CPU profiles of one process side by side (the soak bench's first and last interval,
 * SOAK_CPU_PROFILE_DIR): the functions with the most self time in each, and those whose self time
 * changed most between them. This is how a decay's cause is found: what the process spends more
 * on per operation at the end than at the start.
 *
 * `node dist/bench/cpu-profile-diff.js first.cpuprofile last.cpuprofile [--ops FIRST,LAST] [--top N]`
 *
 * With `--ops` (operations answered during each profile) self time is given in µs per
 * operation, which the machine's other load barely moves; without it, in percent of the
 * profile's busy samples (everything but `(idle)`). Only the profiled (main) thread is seen.
 */
import path from 'node:path';
import { selfTimes } from './servers/cpu-profile';

export interface ProfileDiffRow {
  frame: string;
  first: number;
  last: number;
  /** last - first, in the unit of the columns. */
  change: number;
}

export interface ProfileDiff {
  /** 'µs/op' when operation counts were given, else '% busy'. */
  unit: string;
  /** Busy (non-idle) time of each profile in that unit. */
  busy: { first: number; last: number };
  topFirst: ProfileDiffRow[];
  topLast: ProfileDiffRow[];
  /** Largest changes first (either sign). */
  changed: ProfileDiffRow[];
}

const IDLE = '(idle)';

export function diffProfiles(firstFile: string, lastFile: string, ops?: { first: number; last: number }, top = 15): ProfileDiff {
  const first = selfTimes(firstFile);
  const last = selfTimes(lastFile);
  const busyMs = (profile: ReturnType<typeof selfTimes>) => profile.totalMs - (profile.byFrame.get(IDLE) ?? 0);
  const firstBusy = busyMs(first);
  const lastBusy = busyMs(last);
  // µs of self time per operation, or percent of the busy time.
  const scaleFirst = ops ? 1000 / ops.first : 100 / firstBusy;
  const scaleLast = ops ? 1000 / ops.last : 100 / lastBusy;
  const frames = new Set([...first.byFrame.keys(), ...last.byFrame.keys()]);
  frames.delete(IDLE);
  const rows = [...frames].map((frame): ProfileDiffRow => {
    const a = (first.byFrame.get(frame) ?? 0) * scaleFirst;
    const b = (last.byFrame.get(frame) ?? 0) * scaleLast;
    return { frame, first: round2(a), last: round2(b), change: round2(b - a) };
  });
  return {
    unit: ops ? 'µs/op' : '% busy',
    busy: { first: round2(firstBusy * scaleFirst), last: round2(lastBusy * scaleLast) },
    topFirst: [...rows].sort((x, y) => y.first - x.first).slice(0, top),
    topLast: [...rows].sort((x, y) => y.last - x.last).slice(0, top),
    changed: [...rows].sort((x, y) => Math.abs(y.change) - Math.abs(x.change)).slice(0, top),
  };
}

/** The diff as plain text: three tables (top of the first, top of the last, largest changes). */
export function formatProfileDiff(diff: ProfileDiff, labels = { first: 'first', last: 'last' }): string {
  const out: string[] = [`busy main thread: ${labels.first} ${diff.busy.first} ${diff.unit}, ${labels.last} ${diff.busy.last} ${diff.unit}`];
  const table = (title: string, rows: ProfileDiffRow[]) => {
    out.push('', `${title} (${diff.unit}: ${labels.first} / ${labels.last} / change)`);
    for (const row of rows) out.push(`  ${fixed(row.first)} ${fixed(row.last)} ${signed(row.change)}  ${row.frame}`);
  };
  table(`top by self time, ${labels.first}`, diff.topFirst);
  table(`top by self time, ${labels.last}`, diff.topLast);
  table('largest changes', diff.changed);
  return out.join('\n');
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

function fixed(value: number): string {
  return value.toFixed(2).padStart(9);
}

function signed(value: number): string {
  return `${value >= 0 ? '+' : ''}${value.toFixed(2)}`.padStart(9);
}

function main(argv: string[]): number {
  const files: string[] = [];
  let ops: { first: number; last: number } | undefined;
  let top = 15;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--ops') {
      const [a, b] = (argv[++i] ?? '').split(',').map(Number);
      if (!(a > 0 && b > 0)) {
        console.error('--ops takes two positive counts: --ops FIRST,LAST');
        return 2;
      }
      ops = { first: a, last: b };
    } else if (argv[i] === '--top') {
      top = Number(argv[++i]);
      if (!(top > 0)) {
        console.error('--top takes a positive number');
        return 2;
      }
    } else {
      files.push(argv[i]);
    }
  }
  if (files.length !== 2) {
    console.error('usage: node dist/bench/cpu-profile-diff.js first.cpuprofile last.cpuprofile [--ops FIRST,LAST] [--top N]');
    return 2;
  }
  console.log(formatProfileDiff(diffProfiles(files[0], files[1], ops, top), { first: path.basename(files[0]), last: path.basename(files[1]) }));
  return 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
