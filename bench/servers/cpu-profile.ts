/**
 * CPU profiling of a benchmarked process that is started as users start it (`node dist/src/main.js`),
 * where `node --cpu-prof` is of no use: the gateway ends on SIGTERM through Nest's shutdown hooks,
 * which re-raise the signal, and the profile is never written.
 *
 * Used as a preload (`node --require dist/bench/servers/cpu-profile.js ...`) with
 * BENCH_CPU_PROFILE_FILE set: a first SIGUSR2 starts profiling (so start-up is left out), a second
 * stops it and writes the profile (Chrome DevTools .cpuprofile) to that file. `summarizeProfile` gives the functions
 * with the most self time.
 */
import fs from 'node:fs';
import inspector from 'node:inspector';

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

/** The `top` frames by self time (samples where the frame itself was running). */
export function summarizeProfile(file: string, top = 15): SelfTime[] {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const selfMs = new Map<number, number>();
  if (profile.samples && profile.timeDeltas) {
    for (let i = 0; i < profile.samples.length; i++) {
      const id = profile.samples[i];
      selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
    }
  } else {
    for (const node of profile.nodes) selfMs.set(node.id, node.hitCount ?? 0);
  }
  let total = 0;
  const byFrame = new Map<string, number>();
  for (const node of profile.nodes) {
    const ms = selfMs.get(node.id) ?? 0;
    total += ms;
    const key = frameName(node);
    byFrame.set(key, (byFrame.get(key) ?? 0) + ms);
  }
  return [...byFrame.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([frame, ms]) => ({ frame, percent: total === 0 ? 0 : Math.round((ms / total) * 1000) / 10 }));
}

function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName === '' ? '(anonymous)' : functionName;
  if (url === '') return name;
  const short = url.replace(/^file:\/\//, '').replace(/^.*\/node_modules\//, '').replace(/^.*\/dist\//, '');
  return `${name} (${short}:${lineNumber + 1})`;
}

/** The first SIGUSR2 starts the profiler, the second stops it and writes the profile. */
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
if (target && require.main !== module) profileOnSignal(target);
