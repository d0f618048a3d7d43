import type { Attributes, Span, Tracer } from '@opentelemetry/api';
import type { IdGenerator, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';
import { randomHex } from '../common/random-hex';
import { w3cTraceId } from '../common/trace-id';
import type { TelemetrySettings } from '../config/shared-settings';
import type { AuditRecord } from '../audit-record/audit-record';
import { decisionSpanId } from '../decision/decision-id';
import type { DecisionEvent } from '../decision/decision-events';

/** Spans waiting for export at most; past it new ones are dropped, never memory without bound. */
const MAX_QUEUED_SPANS = 8192;
const EXPORT_DELAY_MS = 1000;
/** An export the receiver does not answer is given up after this: shutdown must end within SHUTDOWN_TIMEOUT_MS. */
const EXPORT_TIMEOUT_MS = 5000;

/**
 * OpenTelemetry spans of the decisions this process makes (docs/observability.md "Traces"), made
 * from the per-decision event (DecisionEvents) and sent over OTLP/HTTP (JSON) to
 * OTEL_EXPORTER_OTLP_ENDPOINT in batches. Each span is in the trace the decision headers name
 * (`X-Service-Trace-Id`, as a W3C trace-id): a `decide` span per decision (its entry point,
 * effect, policy, rule, agent and action), and for a proxied request a server span of the whole
 * exchange around it, whose id the upstream receives as the parent in its `traceparent`. Off
 * unless the endpoint is set: then nothing of OpenTelemetry is even loaded.
 */
export class DecisionSpans {
  private constructor(
    private readonly provider: TracerProvider,
    private readonly tracer: Tracer,
    private readonly ids: PresetIds,
    private readonly context: typeof import('@opentelemetry/api'),
  ) {}

  /** The spans of `settings.tracesUrl`, or null when traces are off. */
  static async start(settings: TelemetrySettings, version: string, logger: Logger): Promise<DecisionSpans | null> {
    if (settings.tracesUrl === undefined) return null;
    const api = await import('@opentelemetry/api');
    const { TracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace');
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    const { resourceFromAttributes } = await import('@opentelemetry/resources');
    const ids = new PresetIds();
    const exporter = new OTLPTraceExporter({ url: settings.tracesUrl, headers: settings.tracesHeaders, timeoutMillis: EXPORT_TIMEOUT_MS });
    const provider = new TracerProvider({
      resource: resourceFromAttributes({ 'service.name': settings.serviceName, 'service.version': version }),
      idGenerator: ids,
      spanProcessors: [new BatchSpanProcessor({ exporter, maxQueueSize: MAX_QUEUED_SPANS, scheduledDelayMillis: EXPORT_DELAY_MS, exportTimeoutMillis: EXPORT_TIMEOUT_MS })],
    });
    logger.info({ endpoint: new URL(settings.tracesUrl).origin, serviceName: settings.serviceName }, 'traces on');
    return new DecisionSpans(provider, provider.getTracer('agentgov'), ids, api);
  }

  /** The DecisionEvents listener: the decision's spans, ended at once (their times come from the entry). */
  readonly observe = ({ entry, ingested }: DecisionEvent): void => {
    if (ingested === true) return;
    const { SpanKind, ROOT_CONTEXT, trace } = this.context;
    this.ids.traceId = entry.traceId === null ? randomHex(16) : w3cTraceId(entry.traceId);
    const decisionSpan = decisionSpanId(entry.id);
    const startTime = entry.ts;
    if (entry.source !== 'proxy' || entry.latencyMs === null) {
      this.ids.spanId = decisionSpan;
      const span = this.tracer.startSpan('decide', { kind: SpanKind.SERVER, startTime, attributes: decisionAttributes(entry) }, ROOT_CONTEXT);
      return this.end(span, startTime + (entry.decisionLatencyMs ?? 0), entry.status);
    }
    this.ids.spanId = decisionSpan;
    const exchange = this.tracer.startSpan(`${entry.method ?? 'GET'} /proxy/*`, { kind: SpanKind.SERVER, startTime, attributes: exchangeAttributes(entry) }, ROOT_CONTEXT);
    const inside = this.tracer.startSpan('decide', { kind: SpanKind.INTERNAL, startTime, attributes: decisionAttributes(entry) }, trace.setSpan(ROOT_CONTEXT, exchange));
    this.end(inside, startTime + (entry.decisionLatencyMs ?? 0), null);
    this.end(exchange, startTime + entry.latencyMs, entry.status);
  };

  /** Sends what is queued and stops (shutdown). */
  async close(): Promise<void> {
    await this.provider.shutdown();
  }

  private end(span: Span, endTime: number, status: number | null): void {
    if (status !== null && status >= 500) span.setStatus({ code: this.context.SpanStatusCode.ERROR, message: `HTTP ${status}` });
    span.end(endTime);
  }
}

/** What a decision span tells: the decision as its audit entry has it (ids and names, no arguments). */
function decisionAttributes(entry: AuditRecord & { id: string }): Attributes {
  const attributes: Attributes = {
    'agentgov.decision_id': entry.id,
    'agentgov.source': entry.source,
    'agentgov.decision': entry.decision,
    'agentgov.enforced': entry.enforced,
    'agentgov.action': entry.action,
    'agentgov.org_id': entry.orgId,
  };
  if (entry.traceId !== null) attributes['agentgov.trace_id'] = entry.traceId;
  if (entry.policyName !== null) attributes['agentgov.policy'] = entry.policyName;
  if (entry.rule !== null) attributes['agentgov.rule'] = entry.rule;
  if (entry.agentId !== null) attributes['agentgov.agent_id'] = entry.agentId;
  if (entry.rateLimited) attributes['agentgov.rate_limited'] = true;
  if (entry.status !== null) attributes['agentgov.status'] = entry.status;
  return attributes;
}

/** What the span of a proxied exchange tells, in OpenTelemetry's HTTP names. */
function exchangeAttributes(entry: AuditRecord & { id: string }): Attributes {
  const attributes: Attributes = { 'http.route': '/proxy/*', 'agentgov.decision_id': entry.id };
  if (entry.method !== null) attributes['http.request.method'] = entry.method;
  if (entry.path !== null) attributes['url.path'] = entry.path;
  if (entry.status !== null) attributes['http.response.status_code'] = entry.status;
  if (entry.upstreamStatus !== null) attributes['agentgov.upstream_status'] = entry.upstreamStatus;
  return attributes;
}

/**
 * The SDK's id generator, told the ids of the next span: the trace id of the request, and the
 * span id named after the decision (the first span of each; the others get random ones). Spans
 * are started synchronously right after the ids are set, so no other span takes them.
 */
class PresetIds implements IdGenerator {
  traceId = '';
  spanId = '';

  generateTraceId(): string {
    return this.traceId;
  }

  generateSpanId(): string {
    const id = this.spanId === '' ? randomHex(8) : this.spanId;
    this.spanId = '';
    return id;
  }
}
