import { Inject, Injectable } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Logger } from 'pino';
import { AdapterAuthenticator } from '../api-keys/adapter-authenticator';
import { AppError } from '../common/app-error';
import { errorBody, errorHeaders } from '../common/error-body';
import { ErrorCode } from '../common/error-code';
import { ServiceHeader } from '../common/service-header';
import { AppConfig } from '../config/app-config';
import { LOGGER } from '../logging/logging.module';
import { sendJson } from '../proxy/decision-headers';
import { readJsonBody } from '../proxy/request-body';
import { checkAnswer, protoJsonAnswer } from './pdp-answers';
import { pdpRequestFromCheck, pdpRequestFromJson, traced } from './pdp-request';
import { RequestFailures } from '../decisions/request-failures';
import { PdpService } from './pdp.service';
import { header, requestTraceId } from '../common/raw-request';
import { atTurnEnd } from '../common/turn-end';

/** The lean paths of the PDP. */
export const LEAN_PDP_PATHS: ReadonlySet<string> = new Set(['/v1/check', '/api/v1/pdp/evaluate']);

/**
 * `POST /v1/check` and `POST /api/v1/pdp/evaluate` on the lean path, mounted ahead of express
 * like the proxy: an adapter checks before every tool call, and express's router and body
 * parsing alone cost more than the whole decision. The same routes are documented (and served,
 * where nothing is mounted) by AdapterController; both call PdpService, so they answer alike.
 */
@Injectable()
export class PdpHttpHandler {
  constructor(
    private readonly config: AppConfig,
    private readonly adapters: AdapterAuthenticator,
    private readonly pdp: PdpService,
    private readonly failures: RequestFailures,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Serves one request to a LEAN_PDP_PATHS path; never throws (errors become responses). */
  handle(request: IncomingMessage, response: ServerResponse, path: string): void {
    const traceId = requestTraceId(request);
    const headers = { [ServiceHeader.ClientTraceId]: traceId };
    this.answer(request, path, traceId).then(
      (body) => atTurnEnd(() => sendJson(response, 200, body, headers)),
      (error: unknown) => {
        request.resume();
        const failure = errorBody(error, traceId);
        if (failure.unexpected) this.logger.error({ err: error, traceId, path }, 'PDP request failed');
        this.failures.answered({ traceId, method: request.method ?? 'POST', path }, failure);
        atTurnEnd(() => sendJson(response, failure.status, failure.body, { ...headers, ...errorHeaders(failure.body) }));
      },
    );
  }

  private async answer(request: IncomingMessage, path: string, traceId: string): Promise<Record<string, unknown>> {
    if (request.method !== 'POST') throw new AppError(ErrorCode.NotFound, `No route ${request.method} ${path}`);
    const adapter = await this.adapters.authenticate({ apiKey: header(request, 'x-api-key'), authorization: request.headers.authorization });
    const body = await readJsonBody(request, this.config.http.maxJsonBytes);
    if (path === '/v1/check') return checkAnswer(await this.pdp.evaluate(adapter.orgId, traced(pdpRequestFromCheck(body), traceId), 'check'));
    return protoJsonAnswer(await this.pdp.evaluate(adapter.orgId, traced(pdpRequestFromJson(body), traceId), 'pdp'));
  }

}

