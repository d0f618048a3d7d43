import { Pool } from 'undici';
import type { PlannedRequest, PolicyKind, TargetName } from './requests';

/** One request sent and what came of it. */
export interface Outcome {
  traceId: string;
  target: TargetName;
  route: 'proxy' | 'enforce';
  kind: PolicyKind;
  variant: string;
  /** Date.now() when sent and when answered (or given up). */
  sentAt: number;
  doneAt: number;
  /** The answer's status; null when none came (`error` says why). */
  status: number | null;
  error: string | null;
  /** The decision the answer carried: the proxy's `X-Service-Decision`, `/enforce`'s `decision`. */
  decision: 'allow' | 'deny' | null;
  /** `error` of a JSON error body. */
  errorCode: string | null;
  /** A 503 for the rate-limit counters in Redis, which the gateway audits as a denial (docs/configuration.md REDIS_URL). */
  redisRefusal: boolean;
}

/** The keep-alive connections to one target, kept across restarts of the process behind its port. */
export function targetPool(url: string, connections: number, timeoutMs: number): Pool {
  return new Pool(url, { connections, pipelining: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connectTimeout: Math.min(timeoutMs, 5000), keepAliveTimeout: 10_000 });
}

/** How often the pacer wakes up to send what has come due. */
const TICK_MS = 5;

/**
 * An open-loop paced load on one target: the i-th request is due at i/rate s whether or not
 * earlier ones were answered, at most `concurrency` in flight; one due while all are busy is
 * shed (counted, never sent), so a target that stops answering is not sent an unbounded queue.
 */
export class PacedStream {
  shed = 0;
  private seq = 0;
  private inFlightCount = 0;
  private startedAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly pool: Pool,
    private readonly rate: number,
    private readonly concurrency: number,
    private readonly next: (seq: number) => PlannedRequest,
    private readonly outcomes: Outcome[],
  ) {}

  get inFlight(): number {
    return this.inFlightCount;
  }

  start(): void {
    this.startedAt = performance.now();
    this.tick();
  }

  /** Stops sending and waits for every request in flight to be answered or to time out. */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await Promise.all(this.pending);
  }

  private tick(): void {
    const due = Math.floor(((performance.now() - this.startedAt) * this.rate) / 1000);
    while (this.seq < due) {
      const seq = this.seq++;
      if (this.inFlightCount >= this.concurrency) {
        this.shed++;
        continue;
      }
      const sending = this.send(this.next(seq));
      this.pending.add(sending);
      void sending.finally(() => this.pending.delete(sending));
    }
    this.timer = setTimeout(() => this.tick(), TICK_MS);
  }

  private async send(request: PlannedRequest): Promise<void> {
    this.inFlightCount++;
    const sentAt = Date.now();
    const outcome: Outcome = {
      traceId: request.traceId,
      target: request.target,
      route: request.route,
      kind: request.kind,
      variant: request.variant,
      sentAt,
      doneAt: sentAt,
      status: null,
      error: null,
      decision: null,
      errorCode: null,
      redisRefusal: false,
    };
    try {
      const response = await this.pool.request({ method: request.method as 'GET', path: request.path, headers: request.headers, body: request.body });
      const text = await response.body.text();
      outcome.status = response.statusCode;
      outcome.decision = decisionOf(request.route, response.statusCode, response.headers['x-service-decision'], text);
      if (response.statusCode >= 300) {
        outcome.errorCode = errorCodeOf(text);
        outcome.redisRefusal = response.statusCode === 503 && text.includes('REDIS_URL');
      }
    } catch (error) {
      outcome.error = errorName(error);
    } finally {
      outcome.doneAt = Date.now();
      this.inFlightCount--;
      this.outcomes.push(outcome);
    }
  }
}

function decisionOf(route: 'proxy' | 'enforce', status: number, header: string | string[] | undefined, text: string): 'allow' | 'deny' | null {
  if (route === 'proxy') return header === 'allow' || header === 'deny' ? header : null;
  if (status !== 200) return null;
  const decision = (parsed(text) as { decision?: unknown } | null)?.decision;
  return decision === 'allow' || decision === 'deny' ? decision : null;
}

function errorCodeOf(text: string): string | null {
  const error = (parsed(text) as { error?: unknown } | null)?.error;
  return typeof error === 'string' ? error : null;
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** The error's code (ECONNREFUSED, UND_ERR_SOCKET, ...), else its name. */
function errorName(error: unknown): string {
  const coded = error as { code?: unknown; name?: unknown; cause?: { code?: unknown } };
  if (typeof coded.code === 'string') return coded.code;
  if (typeof coded.cause?.code === 'string') return coded.cause.code;
  return typeof coded.name === 'string' ? coded.name : 'error';
}
