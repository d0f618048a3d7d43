/**
 * Memory and event-loop samples of a benchmarked process started as users start it, for the soak
 * bench (soak.bench.ts). Used as a preload (`NODE_OPTIONS="--require dist/bench/servers/process-stats.js"`)
 * with BENCH_STATS_FILE set: every BENCH_STATS_INTERVAL_MS (10 s) the main thread appends one JSON
 * line `{atMs, rssBytes, heapUsedBytes, eventLoopDelayP99Ms}` to that file, the delay over the
 * interval since the last line.
 */
import fs from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

export interface ProcessSample {
  atMs: number;
  rssBytes: number;
  heapUsedBytes: number;
  eventLoopDelayP99Ms: number;
}

function sampleEvery(file: string, intervalMs: number): void {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  setInterval(() => {
    const memory = process.memoryUsage();
    const sample: ProcessSample = { atMs: Date.now(), rssBytes: memory.rss, heapUsedBytes: memory.heapUsed, eventLoopDelayP99Ms: delay.percentile(99) / 1e6 };
    delay.reset();
    fs.appendFileSync(file, `${JSON.stringify(sample)}\n`);
  }, intervalMs).unref();
}

const target = process.env.BENCH_STATS_FILE;
if (target && isMainThread && require.main !== module) sampleEvery(target, Number(process.env.BENCH_STATS_INTERVAL_MS ?? 10_000));
