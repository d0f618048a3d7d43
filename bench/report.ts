/** Shape every benchmark returns; bench/run.ts prints it and writes bench/results/<name>.json. */
export interface BenchReport {
  name: string;
  /** One row per measured subject, in the order they ran. */
  rows: BenchRow[];
  /** Targets from the issues, each checked against rows of the same run. */
  targets: BenchTarget[];
  notes?: string[];
  /** Raw series a bench keeps beside its rows (the soak's samples), written to its JSON as they are. */
  data?: Record<string, unknown>;
}

export interface BenchRow {
  subject: string;
  /** Operations (decisions, requests) per second. */
  opsPerSec: number;
  p50Ms?: number;
  p99Ms?: number;
  extra?: Record<string, number | string>;
}

export interface BenchTarget {
  description: string;
  measured: string;
  pass: boolean;
}

/** A run whose rounds fall is a bug to find (a CPU profile of the subject), never machine noise. */
export const MIN_TREND = 0.8;

/** Per-round figures as `extra.perRound` carries them: "a/b/c", rounded. */
export function perRound(values: readonly number[]): string {
  return values.map((value) => (Math.abs(value) >= 100 ? Math.round(value) : Number(value.toPrecision(3)))).join('/');
}

/** The mean of the last third of the rounds over that of the first third (1 with fewer than 3 rounds). */
export function trendOf(values: readonly number[]): number {
  if (values.length < 3) return 1;
  const third = Math.max(1, Math.floor(values.length / 3));
  const mean = (part: readonly number[]) => part.reduce((sum, value) => sum + value, 0) / part.length;
  const first = mean(values.slice(0, third));
  return first > 0 ? mean(values.slice(-third)) / first : 1;
}

/**
 * One target per row that carries `extra.perRound` (3 rounds or more): its last third of rounds
 * keeps >= MIN_TREND of its first third, whatever the summed ratio says. bench/run.ts adds these
 * to every report, so every bench that prints its rounds judges their trend.
 */
export function trendTargets(rows: readonly BenchRow[]): BenchTarget[] {
  const targets: BenchTarget[] = [];
  for (const row of rows) {
    const figures = row.extra?.perRound;
    if (typeof figures !== 'string') continue;
    const values = figures.split('/').map(Number);
    if (values.length < 3 || values.some((value) => !Number.isFinite(value))) continue;
    const trend = trendOf(values);
    targets.push({
      description: `"${row.subject}": the last third of its rounds keeps >= ${MIN_TREND * 100}% of the first third's mean (no decay)`,
      measured: `rounds ${figures}: last third ${(trend * 100).toFixed(1)}% of the first`,
      pass: trend >= MIN_TREND,
    });
  }
  return targets;
}
