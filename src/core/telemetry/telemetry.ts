import type { Logger } from 'pino';
import { metricsServed, TelemetrySettings } from '../config/shared-settings';
import type { DecisionEvents } from '../decision/decision-events';
import { createAccessLog } from '../logging/logger';
import { DecisionMetrics } from './decision-metrics';
import { DecisionSpans } from './decision-spans';
import { GrpcTelemetry } from './grpc-telemetry';
import { MetricsEndpoint } from './metrics-endpoint';
import { RequestTelemetry } from './request-telemetry';
import { ServiceMetrics } from './service-metrics';

/** What an app tells its telemetry about itself. */
export interface TelemetryOptions {
  settings: TelemetrySettings;
  /** `gateway` or `sidecar`: the name on request log lines. */
  app: string;
  /** HOST: where METRICS_PORT listens. */
  host: string;
  version: string;
}

/**
 * The telemetry of one process, shared by the gateway and the sidecar (docs/observability.md):
 * its metrics and where they are served, the HTTP and gRPC request observers (counts, request
 * logs, slow-request warnings), and the decision metrics and spans, which listen to the app's
 * DecisionEvents once `observe` is called. Nothing here touches storage; each
 * app registers its own gauges (audit queue, bundle age) on `metrics`.
 */
export class Telemetry {
  readonly metrics: ServiceMetrics;
  readonly requests: RequestTelemetry;
  readonly grpc: GrpcTelemetry;
  readonly endpoint: MetricsEndpoint;
  private spans: DecisionSpans | null = null;
  private unsubscribe: Array<() => void> = [];

  constructor(
    private readonly options: TelemetryOptions,
    private readonly logger: Logger,
  ) {
    const { settings } = options;
    this.metrics = new ServiceMetrics(metricsServed(settings));
    const access = settings.logRequests ? createAccessLog(options.app) : null;
    this.requests = new RequestTelemetry(settings, this.metrics, logger, access);
    this.grpc = new GrpcTelemetry(settings, this.metrics, logger, access);
    this.endpoint = new MetricsEndpoint(settings, options.host, this.metrics, logger);
  }

  /** Listens to the app's decisions (metrics, spans). */
  async observe(events: DecisionEvents): Promise<void> {
    if (this.metrics.enabled) this.unsubscribe.push(events.subscribe(new DecisionMetrics(this.metrics).observe));
    this.spans = await DecisionSpans.start(this.options.settings, this.options.version, this.logger);
    if (this.spans !== null) this.unsubscribe.push(events.subscribe(this.spans.observe));
  }

  /** Opens METRICS_PORT, if set. */
  async listen(): Promise<void> {
    await this.endpoint.listen();
  }

  /** Stops listening, sends the spans still queued. */
  async close(): Promise<void> {
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe();
    await this.endpoint.close();
    await this.spans?.close().catch((error: unknown) => this.logger.warn({ err: error }, 'spans not sent at shutdown'));
  }
}
