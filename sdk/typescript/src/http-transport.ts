import { GatewayRejectedError, GatewayTimeoutError, GatewayUnavailableError, RejectionCode, retryAfterOf } from './errors';
import { APPROVAL_STATUSES, ApprovalStatus, CheckRequest, GatewayDecision, Transport } from './transport';
import type { AuditEvent } from './audit-event';

/** As the Python SDK maps them: a body too large (413) or not JSON (415) is the request's fault, not an outage. */
const REJECTIONS: Record<number, RejectionCode> = {
  400: 'invalid_argument',
  401: 'unauthenticated',
  403: 'permission_denied',
  404: 'not_found',
  413: 'invalid_argument',
  415: 'invalid_argument',
  429: 'resource_exhausted',
};

/** The PDP over HTTP (POST /v1/check), the fallback when gRPC cannot connect; and POST /v1/audit. */
export class HttpTransport implements Transport {
  readonly name = 'http';

  constructor(
    private readonly gatewayUrl: string,
    private readonly apiKey: string,
  ) {}

  /** One POST /v1/check, aborted after `timeoutMs`. */
  async evaluate(request: CheckRequest, timeoutMs: number): Promise<GatewayDecision> {
    const { args, ...rest } = request;
    const answer = await this.post('/v1/check', { ...rest, arguments: args }, timeoutMs);
    return {
      decision: answer.decision === 'allow' || answer.decision === 'pending' ? answer.decision : 'deny',
      reason: String(answer.reason ?? ''),
      policy: String(answer.policy ?? ''),
      rule: String(answer.rule ?? ''),
      policyVersion: Number(answer.policyVersion ?? 0),
      traceId: String(answer.traceId ?? ''),
      decisionId: String(answer.decisionId ?? ''),
      cacheable: answer.cacheable === true,
      cacheTtlMs: Number(answer.cacheTtlMs ?? 0),
      enforced: answer.enforced !== false,
      approvalId: answer.decision === 'pending' ? String(answer.approvalId ?? '') : '',
      approvalExpiresAt: answer.decision === 'pending' ? String(answer.expiresAt ?? '') : '',
    };
  }

  /** One GET /v1/approvals/:id: where the approval a pending answer opened stands. */
  async approvalStatus(approvalId: string, timeoutMs: number): Promise<ApprovalStatus> {
    const answer = await this.send('GET', `/v1/approvals/${encodeURIComponent(approvalId)}`, undefined, timeoutMs);
    const status = String(answer.status);
    if (!(APPROVAL_STATUSES as readonly string[]).includes(status)) throw new GatewayUnavailableError(`HTTP /v1/approvals: unknown status ${status.slice(0, 40)}`);
    return status as ApprovalStatus;
  }

  /** One POST /v1/audit of a batch body; the gateway records an eventId once, however often it is sent. */
  async sendAudit(events: AuditEvent[], timeoutMs: number): Promise<void> {
    await this.post('/v1/audit', { events }, timeoutMs);
  }

  /** Nothing to close: fetch pools its connections itself. */
  close(): void {}

  private post(path: string, body: object, timeoutMs: number): Promise<Record<string, unknown>> {
    return this.send('POST', path, body, timeoutMs);
  }

  private async send(method: 'GET' | 'POST', path: string, body: object | undefined, timeoutMs: number): Promise<Record<string, unknown>> {
    let response: Response;
    try {
      response = await fetch(this.gatewayUrl + path, {
        method,
        headers: body === undefined ? { 'x-api-key': this.apiKey } : { 'content-type': 'application/json', 'x-api-key': this.apiKey },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      if (errorLike(error)?.name === 'TimeoutError') throw new GatewayTimeoutError(`HTTP ${path}: no answer within ${timeoutMs} ms`);
      throw new GatewayUnavailableError(`HTTP ${path}: ${causeOf(error)}`, true);
    }
    const answer = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (response.ok) return answer;
    const message = String(answer.message ?? response.statusText);
    const rejection = REJECTIONS[response.status];
    if (rejection !== undefined) throw new GatewayRejectedError(rejection, message, retryAfterOf(answer.retry_after));
    throw new GatewayUnavailableError(`HTTP ${path}: ${response.status} ${message}`);
  }
}

/** What failed, with its cause: `fetch failed (connect ECONNREFUSED 127.0.0.1:3000)`. */
function causeOf(error: unknown): string {
  const failure = errorLike(error);
  if (failure === undefined) return String(error);
  const cause = errorLike(failure.cause);
  return cause === undefined ? failure.message : `${failure.message} (${cause.message})`;
}

interface ErrorLike {
  name: string;
  message: string;
  cause?: unknown;
}

/**
 * An error by its shape, not by `instanceof`: fetch's errors are made in Node's own realm, and
 * in another (a vm context, a test runner's sandbox) `instanceof Error` is false for them.
 */
function errorLike(value: unknown): ErrorLike | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { name, message } = value as Partial<Record<'name' | 'message', unknown>>;
  return typeof name === 'string' && typeof message === 'string' ? (value as ErrorLike) : undefined;
}
