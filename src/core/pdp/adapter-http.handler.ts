import { Inject, Injectable } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Logger } from 'pino';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { header, requestTraceId } from '../common/raw-request';
import { ServiceHeader } from '../common/service-header';
import { DECISION_LOG, DecisionLog } from '../decision/decision-sources';
import { RequestFailures } from '../decision/request-failures';
import { readJsonBody } from '../http/body-reader';
import { JsonAnswer, serveJson } from '../http/json-route';
import type { LeanRoute } from '../http/lean-routes';
import { LOGGER } from '../logging/logging.module';
import { ADAPTER_AUTHENTICATION, AdapterAuthentication } from '../decision/adapter-ports';
import { OutcomeRecorder } from './outcome-recorder';
import { checkAnswer, protoJsonAnswer } from './pdp-answers';
import { pdpRequestFromCheck, pdpRequestFromJson, traced } from './pdp-request';
import { PdpAnswer, PdpService } from './pdp.service';

/** The adapter endpoints (docs/pdp.md "Check, act, report"). */
export const ADAPTER_PATHS: ReadonlySet<string> = new Set(['/v1/check', '/api/v1/pdp/evaluate', '/v1/audit']);

/** Settings the adapter endpoints use. */
export const ADAPTER_HTTP_SETTINGS = Symbol('AdapterHttpSettings');
export interface AdapterHttpSettings {
  /** MAX_JSON_BYTES: the largest JSON body taken. */
  maxJsonBytes: number;
}

/**
 * `POST /v1/check`, `POST /api/v1/pdp/evaluate` and `POST /v1/audit`: one implementation for the
 * gateway and the edge sidecar, on the lean path (an adapter checks before every tool call, and
 * express's router and body parsing alone cost more than the whole decision). A thin transport:
 * the adapter's credential (ADAPTER_AUTHENTICATION), the body to a PdpRequest, PdpService, the
 * answer; outcomes go to OutcomeRecorder. Where the decision log must be durable before an
 * answer (the sidecar's write-ahead file) the answer waits for it. Documented in the OpenAPI
 * document from the request schemas its parsers check (pdp-request.ts) and the answer DTOs of
 * pdp.dto.ts (lean-routes.openapi.ts).
 */
@Injectable()
export class AdapterHttpHandler implements LeanRoute {
  constructor(
    @Inject(ADAPTER_HTTP_SETTINGS) private readonly settings: AdapterHttpSettings,
    @Inject(ADAPTER_AUTHENTICATION) private readonly adapters: AdapterAuthentication,
    @Inject(DECISION_LOG) private readonly log: DecisionLog,
    private readonly pdp: PdpService,
    private readonly outcomes: OutcomeRecorder,
    private readonly failures: RequestFailures,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  matches(_request: IncomingMessage, path: string): boolean {
    return ADAPTER_PATHS.has(path);
  }

  /** One of ADAPTER_PATHS. */
  name(path: string): string {
    return path;
  }

  /** Serves one request to an ADAPTER_PATHS path; never throws (errors become responses). */
  handle(request: IncomingMessage, response: ServerResponse, path: string): void {
    const traceId = requestTraceId(request);
    serveJson(
      request,
      response,
      {
        traceId,
        headers: { [ServiceHeader.ClientTraceId]: traceId },
        logger: this.logger,
        what: 'adapter request',
        failed: (failure) => this.failures.answered({ traceId, method: request.method ?? 'POST', path }, failure),
      },
      () => this.answer(request, path, traceId),
    );
  }

  private async answer(request: IncomingMessage, path: string, traceId: string): Promise<JsonAnswer> {
    if (request.method !== 'POST') throw new AppError(ErrorCode.NotFound, `No route ${request.method} ${path}`);
    const { orgId } = await this.adapters.authenticate({ apiKey: header(request, 'x-api-key'), authorization: request.headers.authorization });
    const body = await readJsonBody(request, this.settings.maxJsonBytes);
    if (path === '/v1/audit') return this.durably(202, { ...(await this.outcomes.record(orgId, body, traceId)) });
    if (path === '/v1/check') {
      const { status, answer } = await this.pdp.answer(orgId, traced(pdpRequestFromCheck(body), traceId), 'check');
      return this.durably(status, checkAnswer(answer), answer);
    }
    const { status, answer } = await this.pdp.answer(orgId, traced(pdpRequestFromJson(body), traceId), 'pdp');
    return this.durably(status, protoJsonAnswer(answer), answer);
  }

  private async durably(status: number, body: Record<string, unknown>, answer?: PdpAnswer): Promise<JsonAnswer> {
    await this.log.durable?.();
    return { status, body, headers: answer?.decision === 'DECISION_PENDING' ? { [ServiceHeader.Decision]: 'pending' } : undefined };
  }
}
