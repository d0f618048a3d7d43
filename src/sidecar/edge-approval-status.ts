import { Inject, Injectable } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Logger } from 'pino';
import { AppError } from '../core/common/app-error';
import { ErrorCode } from '../core/common/error-code';
import { header, requestTraceId } from '../core/common/raw-request';
import { ServiceHeader } from '../core/common/service-header';
import { ADAPTER_AUTHENTICATION, AdapterAuthentication } from '../core/decision/adapter-ports';
import { JsonAnswer, serveJson } from '../core/http/json-route';
import type { LeanRoute } from '../core/http/lean-routes';
import { LOGGER } from '../core/logging/logging.module';
import { GatewayLink } from './gateway-link';

/** Approval ids are `appr_<hex>`; any other path is not this route's. */
const STATUS_PATH = /^\/v1\/approvals\/([A-Za-z0-9_-]{1,128})$/;

/**
 * `GET /v1/approvals/:id` at the edge (docs/approvals.md "The sidecar"): where an approval
 * stands, for an adapter's `guard()` that waits on it, as the gateway answers it. Approvals live
 * at the gateway, so the sidecar asks it (its sidecar credential, `GET /api/v1/edge/approvals/:id`)
 * for the adapter's organization; while the gateway cannot be reached it answers 503, which the
 * SDKs wait out within their bound.
 */
@Injectable()
export class EdgeApprovalStatus implements LeanRoute {
  constructor(
    @Inject(ADAPTER_AUTHENTICATION) private readonly adapters: AdapterAuthentication,
    private readonly gateway: GatewayLink,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  matches(request: IncomingMessage, path: string): boolean {
    return request.method === 'GET' && STATUS_PATH.test(path);
  }

  name(): string {
    return '/v1/approvals/:id';
  }

  handle(request: IncomingMessage, response: ServerResponse, path: string): void {
    const traceId = requestTraceId(request);
    serveJson(request, response, { traceId, headers: { [ServiceHeader.ClientTraceId]: traceId }, logger: this.logger, what: 'approval status' }, () => this.answer(request, path));
  }

  private async answer(request: IncomingMessage, path: string): Promise<JsonAnswer> {
    // A sidecar serves one organization (its bundle's), and the gateway answers its token for that one only.
    await this.adapters.authenticate({ apiKey: header(request, 'x-api-key'), authorization: request.headers.authorization });
    const id = STATUS_PATH.exec(path)![1];
    const answer = await this.gateway.get(`/api/v1/edge/approvals/${id}`);
    if (answer === 'unreachable') throw new AppError(ErrorCode.ServiceUnavailable, 'The gateway cannot be reached: approvals are kept at the gateway (docs/approvals.md)');
    if (answer === 'too_large' || (answer.status !== 200 && answer.status !== 404)) {
      throw new AppError(ErrorCode.ServiceUnavailable, `The gateway answered ${answer === 'too_large' ? 'too much' : answer.status} for the approval`);
    }
    if (answer.status === 404) throw AppError.notFound('approval', id);
    const { status, expiresAt } = JSON.parse(answer.text) as { status: unknown; expiresAt: unknown };
    return { status: 200, body: { id, status, expiresAt } };
  }
}
