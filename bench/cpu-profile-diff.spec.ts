import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { diffProfiles, formatProfileDiff } from './cpu-profile-diff';

/** A .cpuprofile whose samples spend `ms` of self time in each named frame (1 ms a sample). */
function profile(dir: string, name: string, ms: Record<string, number>): string {
  const frames = Object.keys(ms);
  const nodes = frames.map((frame, index) => ({ id: index + 1, callFrame: { functionName: frame, url: frame.startsWith('(') ? '' : 'file:///app/dist/src/x.js', lineNumber: index } }));
  const samples = frames.flatMap((frame, index) => Array.from({ length: ms[frame] }, () => index + 1));
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify({ nodes, startTime: 0, endTime: samples.length * 1000, samples, timeDeltas: samples.map(() => 1000) }));
  return file;
}

describe('the CPU profile diff', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-diff-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('gives self time per operation of both profiles and ranks the frames by how much they changed', () => {
    const first = profile(dir, 'first.cpuprofile', { '(garbage collector)': 100, decide: 200, write: 200, '(idle)': 500 });
    const last = profile(dir, 'last.cpuprofile', { '(garbage collector)': 400, decide: 200, write: 220, '(idle)': 100 });
    // 1,000 operations during the first, 500 during the last.
    const diff = diffProfiles(first, last, { first: 1000, last: 500 });
    expect(diff.unit).toBe('µs/op');
    expect(diff.busy).toEqual({ first: 500, last: 1640 });
    expect(diff.changed[0]).toEqual({ frame: '(garbage collector)', first: 100, last: 800, change: 700 });
    expect(diff.changed.map((row) => row.frame)).not.toContain('(idle)');
    expect(diff.topLast.map((row) => row.frame)).toEqual(['(garbage collector)', 'write (src/x.js:3)', 'decide (src/x.js:2)']);
    expect(formatProfileDiff(diff)).toContain('+700.00  (garbage collector)');
  });

  it('without operation counts gives shares of the busy time', () => {
    // (idle) last: the last sample has no time of its own (timeDeltas[i + 1] is sample i's).
    const first = profile(dir, 'a.cpuprofile', { decide: 30, write: 70, '(idle)': 10 });
    const last = profile(dir, 'b.cpuprofile', { decide: 50, write: 50, '(idle)': 1 });
    const diff = diffProfiles(first, last);
    expect(diff.unit).toBe('% busy');
    const decide = diff.changed.find((row) => row.frame.startsWith('decide'))!;
    expect([decide.first, decide.last, decide.change]).toEqual([30, 50, 20]);
  });
});
