import { Inject, Injectable } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { AppError } from '../core/common/app-error';
import { ErrorCode } from '../core/common/error-code';
import { ServiceHeader } from '../core/common/service-header';
import { SidecarConfig } from './sidecar-config';
import { DecisionService } from '../core/decision/decision.service';
import { limitError, outcomeOf, statusOf } from '../core/decision/verdict-answer';
import { AgentAuthenticator, AuthenticatedAgent } from '../core/decision/agent-authenticator';
import { LOGGER } from '../core/logging/logging.module';
import { sendJson } from '../core/http/send-json';
import { readJsonContent } from '../core/http/body-reader';
import { AuditWal } from './audit-wal';
import { AuthenticatedAgents } from './authenticated-agents';
import { BundleStore } from './bundle-store';
import { agentIdOf, batchItems, decisionRequestOf, enforceItem } from './enforce-request';
import { answerMembers, sendJsonText } from './enforce-answer';
import { roundMs } from '../core/audit-record/audit-record';
import { jsonNumber, jsonString } from '../core/common/json-text';
import { pathOf, rawHeader, requestTraceId } from '../core/common/raw-request';
import { SidecarHealth } from './sidecar-health';
import type { LeanRoute } from '../core/http/lean-routes';
import { sendFailure } from '../core/http/json-route';
import { ShutdownState } from '../core/common/shutdown-state';

/** The paths this handler serves. */
const PATHS: ReadonlySet<string> = new Set(['/enforce', '/enforce/batch', '/health', '/health/ready']);

/**
 * The sidecar's hot endpoints on the lean path (no express): `POST /enforce`, `POST
 * /enforce/batch`, `GET /health` and `GET /health/ready`. A thin transport over the decision core: body to
 * DecisionRequest, `DecisionService.check`, answer; the audit entry is on disk (AuditWal's
 * group commit) before the answer is sent. With no valid bundle every request is refused
 * with 503 and the reason (fail closed).
 */
@Injectable()
export class SidecarHandler implements LeanRoute {
  private readonly agents = new AuthenticatedAgents();

  constructor(
    private readonly config: SidecarConfig,
    private readonly store: BundleStore,
    private readonly authenticator: AgentAuthenticator,
    private readonly decisions: DecisionService,
    private readonly wal: AuditWal,
    private readonly health: SidecarHealth,
    private readonly shutdown: ShutdownState,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** True when this handler serves the request's path. */
  matches(_request: IncomingMessage, path: string): boolean {
    return PATHS.has(path);
  }

  /** One of its paths. */
  name(path: string): string {
    return path;
  }

  /** Serves one request; never throws. */
  handle(request: IncomingMessage, response: ServerResponse): void {
    const traceId = requestTraceId(request);
    this.serve(request, response, traceId).catch((error: unknown) =>
      sendFailure(request, response, { traceId, headers: { [ServiceHeader.TraceId]: traceId }, logger: this.logger, what: 'sidecar request' }, error),
    );
  }

  /** The 503 every decision gets while no valid bundle is in force. */
  failClosed(response: ServerResponse, traceId: string, reason: string): void {
    sendJson(
      response,
      503,
      { error: ErrorCode.ServiceUnavailable, message: `No valid policy bundle, so everything is denied: ${reason}`, decision: 'deny', reason },
      { [ServiceHeader.TraceId]: traceId },
    );
  }

  private async serve(request: IncomingMessage, response: ServerResponse, traceId: string): Promise<void> {
    const path = pathOf(request.url);
    if (path === '/health') return this.sendHealth(request, response);
    if (path === '/health/ready') return this.sendReadiness(request, response);
    if (request.method !== 'POST') throw new AppError(ErrorCode.NotFound, `Cannot ${request.method} ${path}`);
    const started = performance.now();
    const body = await this.readJson(request);
    const failure = this.store.failure;
    if (failure !== null) return this.failClosed(response, traceId, failure);
    const authorization = rawHeader(request, 'authorization', false);
    const agent = this.agents.get(authorization, this.store.bundle, Date.now()) ?? (await this.authenticate(authorization));
    const named = agentIdOf(body);
    // Not echoed: it is the caller's input, and a client that mixed up its fields sent its token there.
    if (named !== undefined && named !== agent.agent.id) throw new AppError(ErrorCode.Forbidden, 'The body’s agentId is not the agent of the token');
    if (path === '/enforce') return this.enforce(response, agent, body, traceId, started);
    return this.enforceBatch(response, agent, body, traceId, started);
  }

  /**
   * The agent of a token not in the cache (AuthenticatedAgents), then remembered under the
   * bundle that was in force when authentication began.
   */
  private async authenticate(authorization: string | undefined): Promise<AuthenticatedAgent> {
    const bundle = this.store.bundle;
    const agent = await this.authenticator.authenticate(authorization);
    this.agents.set(authorization, bundle, agent);
    return agent;
  }

  /** The answer (enforce-answer.ts) with the bundle version, the mode and the trace id. */
  private async enforce(response: ServerResponse, agent: AuthenticatedAgent, body: Record<string, unknown>, traceId: string, started: number): Promise<void> {
    const verdict = await this.decisions.check(agent, decisionRequestOf(enforceItem(body), traceId));
    await this.wal.durable();
    // Answered as /v1/check answers (verdict-answer.ts): a tripped limit a 429, a held action 202, else 200.
    const outcome = outcomeOf(verdict);
    if (outcome.kind === 'limited') throw limitError(verdict, outcome);
    const answer = answerMembers(verdict, performance.now() - started);
    sendJsonText(response, statusOf(outcome, 'reporting'), `{${answer},${this.trailer(traceId)}}`, traceId);
  }

  /** Each action's answer with its `action`; `allAllowed`, the whole request's `latencyMs`, and as /enforce. */
  private async enforceBatch(response: ServerResponse, agent: AuthenticatedAgent, body: Record<string, unknown>, traceId: string, started: number): Promise<void> {
    const items = batchItems(body);
    const results: string[] = [];
    let allAllowed = true;
    for (const item of items) {
      const itemStarted = performance.now();
      const verdict = await this.decisions.check(agent, decisionRequestOf(item, traceId));
      if ((verdict.enforced && verdict.decision.effect === 'deny') || verdict.pending !== undefined) allAllowed = false;
      results.push(`{"action":${jsonString(item.action)},${answerMembers(verdict, performance.now() - itemStarted)}}`);
    }
    await this.wal.durable();
    const latencyMs = jsonNumber(roundMs(performance.now() - started));
    sendJsonText(response, 200, `{"results":[${results.join(',')}],"allAllowed":${allAllowed},"latencyMs":${latencyMs},${this.trailer(traceId)}}`, traceId);
  }

  /** The members every /enforce answer ends with. */
  private trailer(traceId: string): string {
    return `"bundleVersion":${jsonString(this.store.bundle?.version ?? null)},"mode":${jsonString(this.config.mode)},"traceId":${jsonString(traceId)}`;
  }

  private sendHealth(request: IncomingMessage, response: ServerResponse): void {
    request.resume();
    const report = this.health.reportFor(rawHeader(request, 'authorization', false));
    // Degraded still decides: a load balancer must not take the sidecar out for a full disk alone.
    sendJson(response, report.status === 'fail_closed' ? 503 : 200, report as unknown as Record<string, unknown>);
  }

  /**
   * Readiness (docs/observability.md "Probes"): 503 without a valid bundle (every decision would be
   * refused) and once shutdown has begun; `/health` stays the liveness and status answer.
   */
  private sendReadiness(request: IncomingMessage, response: ServerResponse): void {
    request.resume();
    const reasons: string[] = [];
    if (this.shutdown.shuttingDown) reasons.push('shutting down');
    const failure = this.store.failure;
    if (failure !== null) reasons.push(`no valid policy bundle: ${failure}`);
    sendJson(response, reasons.length > 0 ? 503 : 200, { status: reasons.length > 0 ? 'not_ready' : 'ready', reasons, timestamp: new Date().toISOString() });
  }

  /** `/enforce`'s body: read as the gateway reads its JSON bodies (no NUL, so the gateway can store the entry it becomes), any content type. */
  private async readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
    const parsed = await readJsonContent(request, this.config.maxJsonBytes);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw AppError.invalid('Request body must be a JSON object');
    return parsed as Record<string, unknown>;
  }
}

