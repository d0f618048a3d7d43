import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Metric } from 'prom-client';
import type { BucketHistogram } from './bucket-histogram';

/** prom-client default metrics left out (docs/observability.md). */
const MISNAMED_DEFAULT_GAUGES = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** A metric's labels. */
export type Labels = Record<string, string>;
/** One labelled value of a metric, as read at a scrape. */
export type Sample = readonly [labels: Labels, value: number];

/**
 * The Prometheus metrics of one process (docs/observability.md "Metrics"), on prom-client: its
 * registry and exposition format with the Node.js process metrics, and the service's own. Nothing
 * is observed through prom-client on the request path (its metrics hash their labels at every
 * observation): each part keeps its counts in plain numbers (and BucketHistograms) and registers
 * here a function that reads them, called at each scrape. When
 * /metrics is served nowhere (`enabled` false) nothing is registered and the parts skip their
 * counting.
 */
export class ServiceMetrics {
  private readonly registry: Registry | null;

  constructor(readonly enabled: boolean) {
    this.registry = enabled ? new Registry() : null;
    if (this.registry === null) return;
    collectDefaultMetrics({ register: this.registry });
    // Gauges named like counters, which `promtool check metrics` refuses; `nodejs_active_handles`
    // and `nodejs_active_requests` (by type) and the event loop's own metrics say the same.
    for (const name of MISNAMED_DEFAULT_GAUGES) this.registry.removeSingleMetric(name);
  }

  /** A counter whose values `read` gives at each scrape (a number, or one per label set); they only ever grow. */
  counter(name: string, help: string, read: () => number | readonly Sample[]): void {
    this.registry?.registerMetric(new SampledMetric(name, help, 'counter', read) as unknown as Metric);
  }

  /** A gauge read at each scrape; `null` leaves it without a value (nothing to measure now). */
  gauge(name: string, help: string, read: () => number | null | readonly Sample[]): void {
    this.registry?.registerMetric(new SampledMetric(name, help, 'gauge', read) as unknown as Metric);
  }

  /** A histogram made of BucketHistograms, one per label set, read at each scrape. */
  histogram(name: string, help: string, read: () => ReadonlyArray<readonly [Labels, BucketHistogram]>): void {
    this.registry?.registerMetric(new HistogramMetric(name, help, read) as unknown as Metric);
  }

  /** The exposition text of every metric (Prometheus text format 0.0.4). */
  async exposition(): Promise<string> {
    return this.registry === null ? '' : this.registry.metrics();
  }

  get contentType(): string {
    return this.registry?.contentType ?? 'text/plain; version=0.0.4; charset=utf-8';
  }
}

/** One exposition line of a metric as prom-client's Registry formats it. */
interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName: string;
}

/**
 * A counter or gauge as prom-client's Registry reads one (`get()`, the shape its own metrics give
 * and `getMetricsAsJSON` documents), its values read when scraped.
 */
class SampledMetric {
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge',
    private readonly read: () => number | null | readonly Sample[],
  ) {}

  get(): { name: string; help: string; type: string; aggregator: string; values: MetricValue[] } {
    const read = this.read();
    const samples: readonly Sample[] = read === null ? [] : typeof read === 'number' ? [[{}, read]] : read;
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: samples.map(([labels, value]) => ({ labels, value, metricName: this.name })) };
  }

  reset(): void {
    // Values belong to the parts that count them; a registry reset does not clear them.
  }
}

/**
 * A histogram metric as prom-client's Registry reads one (`get()`, the shape its own Histogram
 * gives and `getMetricsAsJSON` documents): cumulative `_bucket` lines with `le`, then `_sum` and
 * `_count`, per label set.
 */
class HistogramMetric {
  readonly type = 'histogram';
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly read: () => ReadonlyArray<readonly [Labels, BucketHistogram]>,
  ) {}

  get(): { name: string; help: string; type: string; aggregator: string; values: MetricValue[] } {
    const values: MetricValue[] = [];
    for (const [labels, histogram] of this.read()) {
      let cumulative = 0;
      for (let bucket = 0; bucket < histogram.bounds.length; bucket++) {
        cumulative += histogram.counts[bucket];
        values.push({ labels: { ...labels, le: histogram.bounds[bucket] }, value: cumulative, metricName: `${this.name}_bucket` });
      }
      values.push({ labels: { ...labels, le: '+Inf' }, value: histogram.count, metricName: `${this.name}_bucket` });
      values.push({ labels, value: histogram.sum, metricName: `${this.name}_sum` });
      values.push({ labels, value: histogram.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    // Counts belong to the parts that observe them; a registry reset does not clear them.
  }
}
