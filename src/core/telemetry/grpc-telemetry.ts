import { Metadata, ServerInterceptingCall, status as GrpcStatus } from '@grpc/grpc-js';
import type { ServerInterceptingCallInterface, ServerInterceptor, ServerMethodDefinition, StatusObject } from '@grpc/grpc-js';

/** A call's final status as interceptors see it (grpc-js's PartialStatusObject). */
type FinalStatus = Pick<StatusObject, 'code' | 'details'>;
import type { Logger } from 'pino';
import type { TelemetrySettings } from '../config/shared-settings';
import { resolveTraceId } from '../common/trace-id';
import type { AccessLog } from '../logging/logger';
import type { Sample, ServiceMetrics } from './service-metrics';

/** The status names of gRPC codes, as metrics and logs show them (`OK`, `PERMISSION_DENIED`). */
const CODE_NAMES = new Map<number, string>(Object.entries(GrpcStatus).filter(([, code]) => typeof code === 'number').map(([name, code]) => [code as number, name]));

/**
 * What the gRPC server tells of each call (a grpc-js server interceptor, so every method is
 * seen, a call refused by authentication too):
 * - `agentgov_grpc_requests_total{method, code}` when a call ends;
 * - `agentgov_pdp_streams_open{method}`: EvaluateStream and Subscribe calls under way;
 * - request log lines (LOG_REQUESTS): one per unary call, one per message a bidirectional stream
 *   (EvaluateStream) answers, with its decision and trace id, and one when any call ends in an
 *   error;
 * - a warning for a unary call, or a streamed answer, slower than SLOW_REQUEST_MS.
 */
export class GrpcTelemetry {
  /** Calls ended, by `<method path> <code>`. */
  private readonly ended = new Map<string, number>();
  /** Streaming calls under way, by method path. */
  private readonly open = new Map<string, number>();
  private readonly counting: boolean;

  constructor(
    private readonly settings: TelemetrySettings,
    metrics: ServiceMetrics,
    private readonly logger: Logger,
    private readonly access: AccessLog | null,
  ) {
    this.counting = metrics.enabled;
    metrics.counter('agentgov_grpc_requests_total', 'gRPC calls ended, by method and status code', () => this.endedSamples());
    metrics.gauge('agentgov_pdp_streams_open', 'Streaming PDP calls (EvaluateStream, Subscribe) open now', () => [...this.open].map(([method, count]): Sample => [{ method }, count]));
  }

  /** False when nothing is to be done per call: the interceptor is then not installed. */
  get needed(): boolean {
    return this.counting || this.access !== null || this.settings.slowRequestMs > 0;
  }

  /** The interceptor to install on the gRPC server (its `interceptors` option). */
  readonly interceptor: ServerInterceptor = (method, call) => new WatchedCall(this, method, call).call;

  /** A call ended with `code`. */
  callEnded(watched: WatchedCall, code: number, details: string | undefined): void {
    const path = watched.method.path;
    if (this.counting) {
      const key = `${path} ${code}`;
      this.ended.set(key, (this.ended.get(key) ?? 0) + 1);
    }
    if (watched.streaming) this.open.set(path, (this.open.get(path) ?? 1) - 1);
    const durationMs = performance.now() - watched.started;
    // A unary call is one request; a stream's requests were each told as their answers left.
    const request = !watched.method.requestStream && !watched.method.responseStream;
    if (request) this.answered(watched, durationMs, code, watched.lastAnswer);
    else if (code !== GrpcStatus.OK && this.access !== null) this.access({ ...watched.fields(durationMs, code), error: details ?? null });
  }

  /** A streaming call began. */
  streamOpened(watched: WatchedCall): void {
    const path = watched.method.path;
    this.open.set(path, (this.open.get(path) ?? 0) + 1);
  }

  /** A request was answered: a unary call's, or one message of a bidirectional stream. */
  answered(watched: WatchedCall, durationMs: number, code: number, answer: unknown): void {
    const slow = this.settings.slowRequestMs > 0 && durationMs > this.settings.slowRequestMs;
    if (!slow && this.access === null) return;
    const fields = { ...watched.fields(durationMs, code), ...answerFields(answer) };
    if (this.access !== null) this.access(fields);
    if (slow) this.logger.warn({ ...fields, slowRequestMs: this.settings.slowRequestMs }, 'slow request');
  }

  private endedSamples(): Sample[] {
    return [...this.ended].map(([key, count]): Sample => {
      const space = key.lastIndexOf(' ');
      return [{ method: key.slice(0, space), code: CODE_NAMES.get(Number(key.slice(space + 1))) ?? key.slice(space + 1) }, count];
    });
  }
}

/** One call under watch: when it began, when each of its messages arrived, how it ended. */
class WatchedCall {
  readonly call: ServerInterceptingCall;
  readonly started = performance.now();
  readonly streaming: boolean;
  /** The last message answered (a unary call's answer). */
  lastAnswer: unknown = undefined;
  private traceId: string | null = null;
  /** When each message not yet answered arrived (a bidirectional stream answers in order). */
  private readonly arrivals: number[] = [];
  private done = false;

  constructor(
    private readonly telemetry: GrpcTelemetry,
    readonly method: ServerMethodDefinition<unknown, unknown>,
    next: ServerInterceptingCallInterface,
  ) {
    this.streaming = method.requestStream || method.responseStream;
    const bidirectional = method.requestStream && method.responseStream;
    this.call = new ServerInterceptingCall(next, {
      start: (startNext) =>
        startNext({
          onReceiveMetadata: (metadata: Metadata, pass: (metadata: Metadata) => void) => {
            this.traceId = clientTraceId(metadata);
            pass(metadata);
          },
          onReceiveMessage: bidirectional
            ? (message: unknown, pass: (message: unknown) => void) => {
                this.arrivals.push(performance.now());
                pass(message);
              }
            : undefined,
          onCancel: () => this.end(GrpcStatus.CANCELLED, 'cancelled by the client'),
        }),
      sendMessage: (message: unknown, pass: (message: unknown) => void) => {
        this.lastAnswer = message;
        const arrived = bidirectional ? this.arrivals.shift() : undefined;
        if (arrived !== undefined) this.telemetry.answered(this, performance.now() - arrived, GrpcStatus.OK, message);
        pass(message);
      },
      sendStatus: <T extends FinalStatus>(status: T, pass: (status: T) => void) => {
        this.end(status.code, status.details);
        pass(status);
      },
    });
    if (this.streaming) telemetry.streamOpened(this);
  }

  /** The fields of a request log line of this call. */
  fields(durationMs: number, code: number): Record<string, unknown> {
    return { route: this.method.path, method: 'grpc', status: CODE_NAMES.get(code) ?? code, durationMs: Math.round(durationMs * 1000) / 1000, traceId: this.traceId };
  }

  private end(code: number, details: string | undefined): void {
    if (this.done) return;
    this.done = true;
    this.telemetry.callEnded(this, code, details);
  }
}

/** The trace id the client sent (`x-trace-id`, else a traceparent's), null without one; an answer's own is preferred where there is one. */
function clientTraceId(metadata: Metadata): string | null {
  const given = metadata.get('x-trace-id')[0];
  const parent = metadata.get('traceparent')[0];
  if (given === undefined && parent === undefined) return null;
  return resolveTraceId(given === undefined ? undefined : String(given), parent === undefined ? undefined : String(parent));
}

/** What a request log line tells of a PDP answer (PolicyResponse): its decision, id and trace id. */
function answerFields(answer: unknown): Record<string, unknown> {
  if (typeof answer !== 'object' || answer === null) return {};
  const { decision, decisionId, traceId } = answer as { decision?: unknown; decisionId?: unknown; traceId?: unknown };
  const fields: Record<string, unknown> = {};
  if (typeof decision === 'string') fields.decision = decision === 'DECISION_ALLOW' ? 'allow' : decision === 'DECISION_DENY' ? 'deny' : decision;
  if (typeof decisionId === 'string') fields.decisionId = decisionId;
  if (typeof traceId === 'string' && traceId !== '') fields.traceId = traceId;
  return fields;
}
