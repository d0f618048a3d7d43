/**
 * A histogram with fixed bucket bounds that costs a few comparisons per observation: the request
 * path keeps these and the metrics registry reads them only when scraped (ServiceMetrics), where
 * prom-client's own Histogram would hash its labels on every observation.
 */
export class BucketHistogram {
  /** Observations per bucket: `counts[i]` those ≤ `bounds[i]` and above the bound before; the last, above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let bucket = 0;
    while (bucket < bounds.length && value > bounds[bucket]) bucket++;
    this.counts[bucket]++;
    this.sum += value;
    this.count++;
  }
}

/** Seconds, from 100 µs (a decision in process) to 10 s (a slow upstream). */
export const LATENCY_BUCKETS: readonly number[] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
