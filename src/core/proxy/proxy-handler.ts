import { checkedSessionId } from '../decision/session-id';
import { createHash } from 'node:crypto';
import { Inject, Injectable, OnApplicationShutdown, Optional } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Logger } from 'pino';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { errorBody, ErrorResponse } from '../common/error-body';
import { ServiceHeader } from '../common/service-header';
import { traceparentFor } from '../common/trace-id';
import { decisionSpanId } from '../decision/decision-id';
import { DecisionRequest, DecisionService, Verdict } from '../decision/decision.service';
import { approvalBody, denialBody, limitBody, Outcome, outcomeOf, statusOf } from '../decision/verdict-answer';
import type { Decision } from '../policy-engine/types';
import { RequestFailures } from '../decision/request-failures';
import { AgentAuthenticator, AuthenticatedAgent } from '../decision/agent-authenticator';
import { LOGGER } from '../logging/logging.module';
import { actionOf, verbOf } from './action-mapping';
import { decisionHeaders } from '../http/decision-headers';
import { sendJson } from '../http/send-json';
import type { LeanRoute } from '../http/lean-routes';
import { isProxyUrl, parseProxyUrl, ProxyTarget } from './proxy-path';
import { contextFromHeaders } from '../http/context-headers';
import { proxyArgs, queryFields } from './proxy-input';
import { BodyFields, bodyFieldsOf, bodyKindOf, MULTIPART_PROBLEM, queryBodyConflict } from './body-fields';
import { requestIntegrityDenial } from './request-integrity';
import { limitedBody, readBody } from '../http/body-reader';
import { PROXY_SETTINGS, ProxySettings } from './proxy-settings';
import { UpstreamClient, UpstreamOutcome } from './upstream-client';
import { header, requestTraceId } from '../common/raw-request';
import { atTurnEnd } from '../common/turn-end';
import { NO_CREDENTIALS, UPSTREAM_CREDENTIALS, UpstreamCredentials } from '../decision/upstream-credentials';
import { DECISION_TOKENS, DecisionTokenSigner, requestHash } from '../decision/decision-token';
import { ForwardedRequest, forwardedRequest } from './forwarded-request';

/** One proxied request: its decision and what the proxy needs to finish it. */
interface Exchange {
  started: number;
  verdict: Verdict;
  target: ProxyTarget;
  /** The upstream credential injected, for the audit entry. */
  credentialId?: string;
}

/** Thrown by the body reader when the client went away: nothing to answer, nothing decided. */
const CLIENT_GONE = Symbol('client gone');

/**
 * The governed proxy (`/proxy/*`), a thin HTTP transport over the governed decision: it turns
 * the request into a DecisionRequest (URL to action, query and JSON body to args, headers to
 * context), then forwards or refuses, sets the decision headers and records the outcome. It is
 * mounted on the HTTP server ahead of express, whose router and body handling alone would cost
 * more than this path's whole budget (docs/architecture.md, "The lean path").
 */
@Injectable()
export class ProxyHandler implements OnApplicationShutdown, LeanRoute {
  private readonly upstream: UpstreamClient | null;

  constructor(
    @Inject(PROXY_SETTINGS) private readonly settings: ProxySettings,
    private readonly authenticator: AgentAuthenticator,
    private readonly decisions: DecisionService,
    private readonly failures: RequestFailures,
    @Inject(LOGGER) private readonly logger: Logger,
    @Optional() @Inject(UPSTREAM_CREDENTIALS) private readonly credentials: UpstreamCredentials = NO_CREDENTIALS,
    @Optional() @Inject(DECISION_TOKENS) private readonly tokens: DecisionTokenSigner | null = null,
  ) {
    this.upstream = settings.upstreamUrl ? new UpstreamClient(settings.upstreamUrl, settings.timeoutMs, settings.trustedProxies) : null;
  }

  matches(request: IncomingMessage): boolean {
    return isProxyUrl(request.url);
  }

  name(): string {
    return '/proxy/*';
  }

  /** Serves one request; never throws (errors become responses). */
  handle(request: IncomingMessage, response: ServerResponse): void {
    const started = performance.now();
    const traceId = requestTraceId(request);
    this.serve(request, response, started, traceId).catch((error: unknown) => {
      // An unreachable database is a 503 (clients retry it), as on every other route; anything else a 500.
      const failure = errorBody(error, traceId);
      if (failure.unexpected) this.logger.error({ err: error, traceId }, 'proxy request failed');
      request.resume();
      sendJson(response, failure.status, failure.body, traceHeaders(traceId));
      this.reportFailure(request, traceId, failure);
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.upstream?.close();
  }

  private async serve(request: IncomingMessage, response: ServerResponse, started: number, traceId: string): Promise<void> {
    const target = parseProxyUrl(request.url!);
    if (typeof target === 'string') return this.refuse(request, response, AppError.invalid(target), traceHeaders(traceId));
    let auth: AuthenticatedAgent;
    try {
      auth = await this.authenticator.authenticate(request.headers.authorization);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return this.refuse(request, response, error, traceHeaders(traceId));
    }
    const body: { read?: Buffer } = {};
    let verdict: Verdict;
    try {
      verdict = await this.decisions.decide(auth, this.decisionRequest(request, target, traceId, body));
    } catch (error) {
      if (error === CLIENT_GONE) return;
      if (!(error instanceof AppError)) throw error;
      return this.refuse(request, response, error, agentHeaders(traceId, auth.agent.id));
    }
    const exchange: Exchange = { started, verdict, target };
    const headers = decisionHeaders(verdict.decision, traceId, auth.agent.id);
    const outcome = outcomeOf(verdict);
    if (outcome.kind === 'allowed') return this.forward(request, response, exchange, headers, body.read);
    this.refuseVerdict(request, response, exchange, headers, outcome);
  }

  private decisionRequest(request: IncomingMessage, target: ProxyTarget, traceId: string, body: { read?: Buffer }): DecisionRequest {
    const method = request.method ?? 'GET';
    const verb = verbOf(method);
    return {
      source: 'proxy',
      traceId,
      action: actionOf(verb, target.path, header(request, 'x-service-action')),
      derivedAction: `${verb}:${target.path}`,
      resource: target.path,
      plugin: 'http',
      function: verb,
      args: proxyArgs(target.path, method, target.query, undefined),
      context: contextFromHeaders(request.headers),
      method,
      path: `/${target.path}`,
      fullArgs: hasBody(request) ? this.bodyReader(request, target, method, body) : undefined,
      approvalId: header(request, 'x-service-approval'),
      sessionId: checkedSessionId(header(request, 'x-service-session'), ServiceHeader.Session),
      fingerprint: () => this.fingerprint(request, target, method, body),
    };
  }

  /**
   * What an approval is bound to (docs/approvals.md): the method, path, query and body bytes of
   * the request. The body is read for it (bounded as an inspected body) when no policy read it.
   */
  private async fingerprint(request: IncomingMessage, target: ProxyTarget, method: string, body: { read?: Buffer }): Promise<string> {
    if (body.read === undefined && hasBody(request)) body.read = await this.readInspectedBody(request);
    const hash = createHash('sha256').update(`${method}\u0000/${target.path}\u0000${target.query}\u0000`);
    if (body.read !== undefined) hash.update(body.read);
    return hash.digest('hex');
  }

  /** How the body is read when a policy reads body fields (body-fields.ts): whatever its type, but multipart. */
  private bodyReader(request: IncomingMessage, target: ProxyTarget, method: string, body: { read?: Buffer }): DecisionRequest['fullArgs'] {
    return async (names) => {
      if (bodyKindOf(request.headers['content-type']) === 'multipart') return requestIntegrityDenial(MULTIPART_PROBLEM);
      body.read = await this.readInspectedBody(request);
      await this.stillAuthenticated(request);
      const headers = { contentType: request.headers['content-type'], contentEncoding: request.headers['content-encoding'] };
      return inspectedArgs(target, method, await bodyFieldsOf(body.read, headers, this.settings.maxInspectedBytes), names);
    };
  }

  /**
   * A body can take minutes to arrive after the token was checked: an agent revoked (or a token
   * expired) meanwhile is refused 401, as its next request would be, not decided and forwarded.
   */
  private async stillAuthenticated(request: IncomingMessage): Promise<void> {
    await this.authenticator.authenticate(request.headers.authorization);
  }

  /** The body a policy inspects, bounded by MAX_JSON_BYTES. */
  private async readInspectedBody(request: IncomingMessage): Promise<Buffer> {
    const read = await readBody(request, Math.min(this.settings.maxInspectedBytes, this.settings.maxBodyBytes));
    if (read === 'aborted') throw CLIENT_GONE;
    if (read === 'too_large') throw tooLarge(this.settings.maxInspectedBytes, 'inspected by policy');
    return read;
  }

  /**
   * A verdict that is not forwarded, answered as verdict-answer.ts says (docs/proxy.md "Answers"):
   * 403 denied; 429 with Retry-After for a tripped rate limit or a spent budget; 202 with the
   * approval to retry with for a held request (docs/approvals.md).
   */
  private refuseVerdict(request: IncomingMessage, response: ServerResponse, exchange: Exchange, headers: Record<string, string>, outcome: Exclude<Outcome, { kind: 'allowed' }>): void {
    request.resume();
    const status = statusOf(outcome, 'refusing');
    if (outcome.kind === 'pending') {
      const body = approvalBody(exchange.verdict, ServiceHeader.Approval);
      atTurnEnd(() => sendJson(response, status, body, { ...headers, [ServiceHeader.Decision]: 'pending' }));
    } else if (outcome.kind === 'limited') {
      const body = limitBody(outcome);
      atTurnEnd(() => sendJson(response, status, body, { ...headers, [ServiceHeader.RetryAfter]: String(body.retry_after) }));
    } else {
      const body = denialBody(exchange.verdict);
      atTurnEnd(() => sendJson(response, status, body, headers));
    }
    this.record(exchange, status, null);
  }

  private forward(request: IncomingMessage, response: ServerResponse, exchange: Exchange, headers: Record<string, string>, body: Buffer | undefined): void {
    const { traceId } = exchange.verdict.request;
    if (this.upstream === null) {
      request.resume();
      sendJson(response, 502, errorBody(new AppError(ErrorCode.NoUpstream, 'No upstream is configured (UPSTREAM_URL)'), traceId).body, headers);
      return this.record(exchange, 502, null);
    }
    const limit = { tooLarge: false };
    const declared = request.headers['content-length'];
    if (declared !== undefined && Number(declared) > this.settings.maxBodyBytes) {
      request.resume();
      sendJson(response, 413, errorBody(tooLarge(this.settings.maxBodyBytes, 'proxied'), traceId).body, headers);
      return this.record(exchange, 413, null);
    }
    const streamed = body ?? (declared !== undefined ? (declared === '0' ? undefined : request) : request.headers['transfer-encoding'] ? limitedBody(request, this.settings.maxBodyBytes, limit) : undefined);
    const { verdict, target } = exchange;
    const credential = this.credentials.forProxy(verdict.principal.agent.orgId, target.path);
    exchange.credentialId = credential?.id;
    const forwarded = forwardedRequest(target, credential);
    if (this.tokens === null || verdict.decision.effect !== 'allow') return this.dispatch(request, response, exchange, headers, forwarded, streamed, undefined, limit);
    // A token binds the body's bytes: a body streamed through unread is read first (bounded by PROXY_MAX_BODY_BYTES).
    if (body !== undefined || !hasBody(request)) return this.withToken(request, response, exchange, headers, forwarded, body, limit);
    readBody(request, this.settings.maxBodyBytes).then(
      (read) => {
        if (read === 'aborted') return this.record(exchange, CLIENT_CLOSED_REQUEST, null);
        if (read === 'too_large') {
          sendJson(response, 413, errorBody(tooLarge(this.settings.maxBodyBytes, 'proxied'), traceId).body, headers);
          return this.record(exchange, 413, null);
        }
        this.withToken(request, response, exchange, headers, forwarded, read, limit);
      },
      (error: unknown) => this.logger.error({ err: error, traceId }, 'proxy request failed reading its body'),
    );
  }

  /** Forwards once the decision token is signed (at the end of the turn, DecisionTokenSigner). */
  private withToken(request: IncomingMessage, response: ServerResponse, exchange: Exchange, headers: Record<string, string>, forwarded: ForwardedRequest, body: Buffer | undefined, limit: { tooLarge: boolean }): void {
    const { verdict } = exchange;
    const claims = DecisionTokenSigner.claims({
      jti: verdict.id,
      sub: verdict.principal.agent.id,
      org: verdict.principal.agent.orgId,
      act: verdict.request.action,
      req: requestHash(verdict.request.method!, this.upstream!.targetOf(forwarded.hashed), body),
      apr: verdict.approvalId,
      cq: forwarded.queryCredential,
    });
    this.tokens!.issue(claims, (token) => this.dispatch(request, response, exchange, headers, forwarded, body, token, limit));
  }

  private dispatch(
    request: IncomingMessage,
    response: ServerResponse,
    exchange: Exchange,
    headers: Record<string, string>,
    forwarded: ForwardedRequest,
    body: ForwardBody,
    token: string | undefined,
    limit: { tooLarge: boolean },
  ): void {
    const { traceId } = exchange.verdict.request;
    this.upstream!.forward(
      {
        method: exchange.verdict.request.method!,
        pathAndQuery: forwarded.sent,
        incoming: request,
        body,
        traceId,
        // The proxy's span of the call (src/core/telemetry/decision-spans.ts) is named after the decision.
        traceparent: traceparentFor(traceId, decisionSpanId(exchange.verdict.id)),
        responseHeaders: headers,
        addedHeaders: forwarded.headersWith(token),
        queryCredential: forwarded.queryValue,
      },
      response,
      (outcome) => {
        // Called from undici's callbacks, which would swallow an error: log it here.
        try {
          this.finishForward(response, exchange, headers, outcome, limit.tooLarge);
        } catch (error) {
          this.logger.error({ err: error, traceId }, 'proxy request failed after the upstream answered');
        }
      },
    );
  }

  private finishForward(response: ServerResponse, exchange: Exchange, headers: Record<string, string>, outcome: UpstreamOutcome, tooLargeBody: boolean): void {
    const { traceId } = exchange.verdict.request;
    switch (outcome.kind) {
      case 'response':
      case 'failed-after-headers':
        return this.record(exchange, outcome.status, outcome.status);
      case 'client-closed':
        // nginx's 499: the client closed the connection before its answer was complete.
        return this.record(exchange, CLIENT_CLOSED_REQUEST, outcome.upstreamStatus);
      case 'timeout':
        sendJson(response, 504, errorBody(new AppError(ErrorCode.GatewayTimeout, `The upstream did not answer within ${this.settings.timeoutMs} ms`), traceId).body, headers);
        return this.record(exchange, 504, null);
      case 'invalid-response':
        this.logger.warn({ traceId, problem: outcome.problem }, 'upstream answer not relayable');
        sendJson(response, 502, errorBody(new AppError(ErrorCode.BadGateway, `The upstream sent an invalid response: ${outcome.problem}`), traceId).body, headers);
        return this.record(exchange, 502, null);
      case 'unreachable':
        if (tooLargeBody) {
          sendJson(response, 413, errorBody(tooLarge(this.settings.maxBodyBytes, 'proxied'), traceId).body, headers);
          return this.record(exchange, 413, null);
        }
        this.logger.warn({ traceId }, 'upstream unreachable');
        sendJson(response, 502, errorBody(new AppError(ErrorCode.BadGateway, 'The upstream could not be reached'), traceId).body, headers);
        return this.record(exchange, 502, null);
    }
  }

  /** Answers an error that came before a decision (nothing to audit: no decision was made; a 5xx is a failure, RequestFailures). */
  private refuse(request: IncomingMessage, response: ServerResponse, error: AppError, headers: Record<string, string>): void {
    request.resume();
    const traceId = headers[ServiceHeader.TraceId];
    const answer = errorBody(error, traceId);
    sendJson(response, error.status, answer.body, headers);
    this.reportFailure(request, traceId, answer);
  }

  /** Tells RequestFailures of an answer that is a failure; most refusals are 4xx, for which the path is not worked out. */
  private reportFailure(request: IncomingMessage, traceId: string, answer: ErrorResponse): void {
    if (answer.status < 500) return;
    this.failures.answered({ traceId, method: request.method ?? 'GET', path: proxiedPath(request.url!) }, answer);
  }

  private record(exchange: Exchange, status: number, upstreamStatus: number | null): void {
    this.decisions.record(exchange.verdict, { status, upstreamStatus, latencyMs: performance.now() - exchange.started, credentialId: exchange.credentialId });
  }
}

/** A forwarded body: read whole, streamed, or none. */
type ForwardBody = Buffer | IncomingMessage | AsyncIterable<Buffer> | undefined;

/** True when the request has a body to read (a declared non-zero length, or chunks). */
function hasBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return length !== undefined ? length !== '0' : request.headers['transfer-encoding'] !== undefined;
}

/**
 * The args of a request whose body a policy reads, or the fixed denial of a body policies
 * cannot read as the upstream may (body-fields.ts).
 */
function inspectedArgs(target: ProxyTarget, method: string, read: BodyFields, names: ReadonlySet<string>): Record<string, unknown> | Decision {
  if ('problem' in read) return requestIntegrityDenial(read.problem);
  if (read.fields === undefined) return proxyArgs(target.path, method, target.query, undefined);
  const conflict = target.query === '' ? undefined : queryBodyConflict(queryFields(target.query), read.fields, names);
  if (conflict !== undefined) return requestIntegrityDenial(conflict);
  return proxyArgs(target.path, method, target.query, read.fields);
}

/** Status recorded for a request whose client went away before its answer was complete (nginx's convention). */
const CLIENT_CLOSED_REQUEST = 499;

/** Headers of a refusal before the agent is known; built only when one is sent. */
function traceHeaders(traceId: string): Record<string, string> {
  return { [ServiceHeader.TraceId]: traceId };
}

/** Headers of a refusal before a decision. */
function agentHeaders(traceId: string, agentId: string): Record<string, string> {
  return { [ServiceHeader.TraceId]: traceId, [ServiceHeader.AgentId]: agentId };
}

function tooLarge(limit: number, what: string): AppError {
  return new AppError(ErrorCode.PayloadTooLarge, `Request body is larger than ${limit} bytes, the limit for bodies ${what}`);
}

/** The path a failed request asked for, as its decision would have recorded it: without `/proxy` and the query. */
function proxiedPath(url: string): string {
  const target = parseProxyUrl(url);
  return typeof target === 'string' ? url.split('?')[0] : `/${target.path}`;
}
