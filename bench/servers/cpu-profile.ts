/**
 * CPU profiling of a benchmarked process that is started as users start it (`node dist/src/main.js`),
 * where `node --cpu-prof` is of no use: the gateway ends on SIGTERM through Nest's shutdown hooks,
 * which re-raise the signal, and the profile is never written.
 *
 * Used as a preload (`node --require dist/bench/servers/cpu-profile.js ...`) with
 * BENCH_CPU_PROFILE_FILE set: a first SIGUSR2 starts profiling (so start-up is left out), a second
 * stops it and writes the profile (Chrome DevTools .cpuprofile) to that file; a third starts again,
 * and so on (the soak bench profiles its first and last interval, renaming the file in between).
 * Only the main thread is profiled. `summarizeProfile` gives the functions with the most self
 * time, `selfTimes` each function's self time in milliseconds (bench/cpu-profile-diff.ts).
 */
import fs from 'node:fs';
import inspector from 'node:inspector';
import { isMainThread } from 'node:worker_threads';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface SelfTime {
  /** `function (file:line)`, file relative to node_modules or dist when it is under one. */
  frame: string;
  /** Share of all samples, percent. */
  percent: number;
}

/** Self time per frame (`function (file:line)`), in ms, and the profile's total, idle included. */
export function selfTimes(file: string): { byFrame: Map<string, number>; totalMs: number; durationMs: number } {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const selfMs = new Map<number, number>();
  if (profile.samples && profile.timeDeltas) {
    for (let i = 0; i < profile.samples.length; i++) {
      const id = profile.samples[i];
      selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0) / 1000);
    }
  } else {
    for (const node of profile.nodes) selfMs.set(node.id, node.hitCount ?? 0);
  }
  let totalMs = 0;
  const byFrame = new Map<string, number>();
  for (const node of profile.nodes) {
    const ms = selfMs.get(node.id) ?? 0;
    totalMs += ms;
    const key = frameName(node);
    byFrame.set(key, (byFrame.get(key) ?? 0) + ms);
  }
  return { byFrame, totalMs, durationMs: (profile.endTime - profile.startTime) / 1000 };
}

/** The `top` frames by self time (samples where the frame itself was running). */
export function summarizeProfile(file: string, top = 15): SelfTime[] {
  const { byFrame, totalMs } = selfTimes(file);
  return [...byFrame.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([frame, ms]) => ({ frame, percent: totalMs === 0 ? 0 : Math.round((ms / totalMs) * 1000) / 10 }));
}

function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName === '' ? '(anonymous)' : functionName;
  if (url === '') return name;
  const short = url.replace(/^file:\/\//, '').replace(/^.*\/node_modules\//, '').replace(/^.*\/dist\//, '');
  return `${name} (${short}:${lineNumber + 1})`;
}

/** Odd SIGUSR2s start the profiler, even ones stop it and write the profile. */
function profileOnSignal(file: string): void {
  const session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 200 }));
  let running = false;
  process.on('SIGUSR2', () => {
    if (!running) {
      running = true;
      session.post('Profiler.start');
      return;
    }
    running = false;
    session.post('Profiler.stop', (error, result) => {
      if (error) {
        process.stderr.write(`cpu profile not written: ${error.message}\n`);
        return;
      }
      fs.writeFileSync(`${file}.part`, JSON.stringify(result.profile));
      fs.renameSync(`${file}.part`, file);
    });
  });
}

const target = process.env.BENCH_CPU_PROFILE_FILE;
if (target && isMainThread && require.main !== module) profileOnSignal(target);
