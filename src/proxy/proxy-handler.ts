import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Logger } from 'pino';
import { AgentAuthenticator, AuthenticatedAgent } from '../agents/agent-authenticator';
import { AuditWriter } from '../audit/audit-writer';
import { AppConfig } from '../config/app-config';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { ServiceHeader } from '../common/service-header';
import { resolveTraceId, traceparentFor } from '../common/trace-id';
import { DecisionService } from '../decisions/decision.service';
import { LOGGER } from '../logging/logging.module';
import { UsageMeter } from '../organizations/usage-meter';
import type { Decision, DecisionInput } from '../policy-engine/types';
import { actionOf, verbOf } from './action-mapping';
import { decisionHeaders, sendJson } from './decision-headers';
import { parseProxyUrl, ProxyTarget } from './proxy-path';
import { proxyArgs, proxyContext } from './proxy-input';
import { INVALID_JSON, isJsonRequest, limitedBody, parseJsonBody, readBody } from './request-body';
import { UpstreamClient, UpstreamOutcome } from './upstream-client';

/** One proxied request as the audit trail records it. */
interface Exchange {
  started: number;
  nowMs: number;
  traceId: string;
  method: string;
  target: ProxyTarget;
  auth: AuthenticatedAgent;
  input: DecisionInput;
  decision: Decision;
  decisionMs: number;
  enforced: boolean;
}

/**
 * The governed proxy's lean path (`/proxy/*`), mounted on the HTTP server ahead of express:
 * authenticate the agent, map the action, decide, then forward or refuse, set the decision
 * headers and hand the exchange to the audit writer. It calls the same Nest services every
 * other entry point uses; it only skips express's router and body handling, which alone
 * cost more than the whole budget of this path (see docs/architecture.md).
 */
@Injectable()
export class ProxyHandler implements OnApplicationShutdown {
  private readonly upstream: UpstreamClient | null;

  constructor(
    private readonly config: AppConfig,
    private readonly authenticator: AgentAuthenticator,
    private readonly decisions: DecisionService,
    private readonly usage: UsageMeter,
    private readonly audit: AuditWriter,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.upstream = config.proxy.upstreamUrl ? new UpstreamClient(config.proxy.upstreamUrl, config.proxy.timeoutMs) : null;
  }

  /** Serves one request; never throws (errors become responses). */
  handle(request: IncomingMessage, response: ServerResponse): void {
    const started = performance.now();
    const traceId = resolveTraceId(header(request, 'x-trace-id'), header(request, 'traceparent'));
    this.serve(request, response, started, traceId).catch((error: unknown) => {
      this.logger.error({ err: error, traceId }, 'proxy request failed');
      sendJson(response, 500, { error: ErrorCode.InternalError, message: 'Internal server error', traceId }, traceHeaders(traceId));
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.upstream?.close();
  }

  private async serve(request: IncomingMessage, response: ServerResponse, started: number, traceId: string): Promise<void> {
    const target = parseProxyUrl(request.url!);
    if (typeof target === 'string') return this.refuse(request, response, new AppError(ErrorCode.InvalidRequest, target), traceHeaders(traceId));
    const nowMs = Date.now();
    // Each step below is synchronous once its caches are warm; awaiting only real promises
    // keeps the common path free of needless microtask hops.
    let auth: AuthenticatedAgent | Promise<AuthenticatedAgent>;
    try {
      auth = this.authenticator.authenticate(request.headers.authorization, nowMs);
      if (auth instanceof Promise) auth = await auth;
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return this.refuse(request, response, error, traceHeaders(traceId));
    }
    const orgId = auth.agent.orgId;
    let withinQuota = this.usage.tryConsume(orgId, nowMs);
    if (withinQuota instanceof Promise) withinQuota = await withinQuota;
    if (!withinQuota) {
      return this.refuse(request, response, new AppError(ErrorCode.QuotaExceeded, 'The organization has used its monthly policy checks'), agentHeaders(traceId, auth.agent.id));
    }
    const backpressure = this.audit.whenWritable();
    if (backpressure !== undefined) await backpressure;

    const method = request.method ?? 'GET';
    const verb = verbOf(method);
    const action = actionOf(verb, target.path, header(request, 'x-service-action'));
    let policies = this.decisions.policies(orgId);
    if (policies instanceof Promise) policies = await policies;
    const applicable = policies.set.applicable({ plugin: 'http', function: verb, action });
    let body: Buffer | undefined;
    let parsed: unknown;
    if (policies.set.readsBodyArgs(applicable) && isJsonRequest(request)) {
      const read = await readBody(request, Math.min(this.config.http.maxJsonBytes, this.config.proxy.maxBodyBytes));
      if (read === 'too_large') return this.refuse(request, response, tooLarge(this.config.http.maxJsonBytes, 'inspected by policy'), agentHeaders(traceId, auth.agent.id));
      if (read === 'aborted') return;
      parsed = parseJsonBody(read);
      if (parsed === INVALID_JSON) return this.refuse(request, response, new AppError(ErrorCode.InvalidJson, 'Request body is not valid JSON'), agentHeaders(traceId, auth.agent.id));
      body = read;
    }
    const input: DecisionInput = {
      agent: auth.agent.facts,
      action,
      resource: target.path,
      plugin: 'http',
      function: verb,
      args: proxyArgs(target.path, method, target.query, parsed),
      context: proxyContext(request.headers),
      delegation: auth.delegation,
    };
    const decisionStarted = performance.now();
    let decision = this.decisions.decide(policies, input, applicable, nowMs);
    if (decision instanceof Promise) decision = await decision;
    const exchange: Exchange = {
      started,
      nowMs,
      traceId,
      method,
      target,
      auth,
      input,
      decision,
      decisionMs: performance.now() - decisionStarted,
      enforced: decision.effect === 'allow' || this.decisions.enforcing,
    };
    const headers = decisionHeaders(decision, traceId, auth.agent.id);
    if (decision.effect === 'deny' && exchange.enforced) return this.deny(request, response, exchange, headers);
    this.forward(request, response, exchange, headers, body);
  }

  private deny(request: IncomingMessage, response: ServerResponse, exchange: Exchange, headers: Record<string, string>): void {
    const { decision } = exchange;
    if (decision.rateLimit) {
      const retryAfter = decision.rateLimit.retryAfterSeconds;
      sendJson(
        response,
        429,
        { error: ErrorCode.RateLimited, message: `Rate limit exceeded: ${decision.reason}`, retry_after: retryAfter, limit: decision.rateLimit.limit },
        { ...headers, [ServiceHeader.RetryAfter]: String(retryAfter) },
      );
    } else {
      sendJson(
        response,
        403,
        {
          error: ErrorCode.Forbidden,
          message: `Denied by policy ${decision.policy}: ${decision.reason}`,
          reason: decision.reason,
          policy: decision.policy,
          action: exchange.input.action,
          trace_id: exchange.traceId,
        },
        headers,
      );
    }
    request.resume();
    this.record(exchange, response.statusCode, null);
  }

  private forward(request: IncomingMessage, response: ServerResponse, exchange: Exchange, headers: Record<string, string>, body: Buffer | undefined): void {
    if (this.upstream === null) {
      request.resume();
      sendJson(response, 502, { error: ErrorCode.NoUpstream, message: 'No upstream is configured (UPSTREAM_URL)' }, headers);
      return this.record(exchange, 502, null);
    }
    const limit = { tooLarge: false };
    const declared = request.headers['content-length'];
    if (declared !== undefined && Number(declared) > this.config.proxy.maxBodyBytes) {
      request.resume();
      sendJson(response, 413, tooLarge(this.config.proxy.maxBodyBytes, 'proxied').toBody(), headers);
      return this.record(exchange, 413, null);
    }
    const streamed = body ?? (declared !== undefined ? (declared === '0' ? undefined : request) : request.headers['transfer-encoding'] ? limitedBody(request, this.config.proxy.maxBodyBytes, limit) : undefined);
    this.upstream.forward(
      {
        method: exchange.method,
        pathAndQuery: `/${exchange.target.path}${exchange.target.query === '' ? '' : `?${exchange.target.query}`}`,
        incoming: request,
        body: streamed,
        traceId: exchange.traceId,
        traceparent: traceparentFor(exchange.traceId),
        responseHeaders: headers,
      },
      response,
      (outcome) => {
        // Called from undici's callbacks, which would swallow an error: log it here.
        try {
          this.finishForward(response, exchange, headers, outcome, limit.tooLarge);
        } catch (error) {
          this.logger.error({ err: error, traceId: exchange.traceId }, 'proxy request failed after the upstream answered');
        }
      },
    );
  }

  private finishForward(response: ServerResponse, exchange: Exchange, headers: Record<string, string>, outcome: UpstreamOutcome, tooLargeBody: boolean): void {
    switch (outcome.kind) {
      case 'response':
      case 'failed-after-headers':
        return this.record(exchange, outcome.status, outcome.status);
      case 'client-closed':
        // nginx's 499: the client closed the connection before its answer was complete.
        return this.record(exchange, CLIENT_CLOSED_REQUEST, outcome.upstreamStatus);
      case 'timeout':
        sendJson(response, 504, { error: ErrorCode.GatewayTimeout, message: `The upstream did not answer within ${this.config.proxy.timeoutMs} ms` }, headers);
        return this.record(exchange, 504, null);
      case 'unreachable':
        if (tooLargeBody) {
          sendJson(response, 413, tooLarge(this.config.proxy.maxBodyBytes, 'proxied').toBody(), headers);
          return this.record(exchange, 413, null);
        }
        this.logger.warn({ traceId: exchange.traceId }, 'upstream unreachable');
        sendJson(response, 502, { error: ErrorCode.BadGateway, message: 'The upstream could not be reached' }, headers);
        return this.record(exchange, 502, null);
    }
  }

  /** Answers an error that came before a decision (nothing to audit: no decision was made). */
  private refuse(request: IncomingMessage, response: ServerResponse, error: AppError, headers: Record<string, string>): void {
    request.resume();
    sendJson(response, error.status, error.toBody(), headers);
  }

  private record(exchange: Exchange, status: number, upstreamStatus: number | null): void {
    const { auth, decision, input } = exchange;
    this.audit.record({
      ts: exchange.nowMs,
      orgId: auth.agent.orgId,
      source: 'proxy',
      kind: 'decision',
      traceId: exchange.traceId,
      agentId: auth.agent.id,
      agentName: auth.agent.name,
      trustTier: auth.agent.trustTier,
      action: input.action,
      method: exchange.method,
      path: `/${exchange.target.path}`,
      decision: decision.effect,
      enforced: exchange.enforced,
      rateLimited: decision.rateLimit !== undefined,
      policyName: decision.policy,
      rule: decision.rule,
      reason: decision.reason,
      decisionLatencyMs: exchange.decisionMs,
      latencyMs: performance.now() - exchange.started,
      status,
      upstreamStatus,
      delegationChain: auth.delegation.chain.length > 0 ? auth.delegation.chain : null,
      input,
      details: null,
    });
  }
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

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function tooLarge(limit: number, what: string): AppError {
  return new AppError(ErrorCode.PayloadTooLarge, `Request body is larger than ${limit} bytes, the limit for bodies ${what}`);
}
