import type { AuditRecord } from '../audit-record/audit-record';
import type { DecisionEvent } from '../decision/decision-events';
import { BucketHistogram, LATENCY_BUCKETS } from './bucket-histogram';
import type { Labels, Sample, ServiceMetrics } from './service-metrics';

/** The entry points a decision comes through (the audit entry's `source`). */
const SOURCES = ['proxy', 'pdp', 'check', 'sidecar', 'mcp'] as const;
/** What became of a decision: allowed; denied; refused by a tripped rate limit; a denial MODE=audit let through. */
const RESULTS = ['allow', 'deny', 'rate_limited', 'would_deny'] as const;

/**
 * Counts the decisions this process made, from the per-decision event every entry point emits
 * (DecisionEvents), so no transport counts anything itself:
 * - `agentgov_decisions_total{source, result}`;
 * - `agentgov_decision_duration_seconds{source}`: the time spent deciding;
 * - `agentgov_proxy_duration_seconds`: a proxied request from its arrival to its answer's last
 *   byte (the upstream's time included).
 * Edge decisions a gateway receives from its sidecars are not its own, and not counted.
 */
export class DecisionMetrics {
  private readonly decisions = new Float64Array(SOURCES.length * RESULTS.length);
  private readonly decisionSeconds = SOURCES.map(() => new BucketHistogram(LATENCY_BUCKETS));
  private readonly proxySeconds = new BucketHistogram(LATENCY_BUCKETS);

  constructor(metrics: ServiceMetrics) {
    metrics.counter('agentgov_decisions_total', 'Decisions made, by entry point (source) and result', () => this.decisionSamples());
    metrics.histogram('agentgov_decision_duration_seconds', 'Time spent deciding, by entry point', () => SOURCES.map((source, index): readonly [Labels, BucketHistogram] => [{ source }, this.decisionSeconds[index]]));
    metrics.histogram('agentgov_proxy_duration_seconds', 'Proxied requests, from arrival to the last byte of the answer', () => [[{}, this.proxySeconds]]);
  }

  /** The DecisionEvents listener. */
  readonly observe = ({ entry, ingested }: DecisionEvent): void => {
    if (ingested === true) return;
    const source = sourceIndex(entry.source);
    if (source < 0) return;
    this.decisions[source * RESULTS.length + resultIndex(entry)]++;
    if (entry.decisionLatencyMs !== null) this.decisionSeconds[source].observe(entry.decisionLatencyMs / 1000);
    if (source === 0 && entry.latencyMs !== null) this.proxySeconds.observe(entry.latencyMs / 1000);
  };

  private decisionSamples(): Sample[] {
    const samples: Sample[] = [];
    for (let source = 0; source < SOURCES.length; source++) {
      for (let result = 0; result < RESULTS.length; result++) samples.push([{ source: SOURCES[source], result: RESULTS[result] }, this.decisions[source * RESULTS.length + result]]);
    }
    return samples;
  }
}

function sourceIndex(source: AuditRecord['source']): number {
  switch (source) {
    case 'proxy':
      return 0;
    case 'pdp':
      return 1;
    case 'check':
      return 2;
    case 'sidecar':
      return 3;
    case 'mcp':
      return 4;
    default:
      return -1;
  }
}

function resultIndex(entry: AuditRecord): number {
  if (entry.rateLimited) return 2;
  if (entry.decision === 'allow') return 0;
  return entry.enforced ? 1 : 3;
}
