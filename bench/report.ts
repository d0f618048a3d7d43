/** Shape every benchmark returns; bench/run.ts prints it and writes bench/results/<name>.json. */
export interface BenchReport {
  name: string;
  /** One row per measured subject, in the order they ran. */
  rows: BenchRow[];
  /** Targets from the issues, each checked against rows of the same run. */
  targets: BenchTarget[];
  notes?: string[];
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
