import { Inject, Injectable } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { AppError } from '../common/app-error';
import { validationFailure } from '../common/validation';
import { errorBody } from '../common/error-body';
import { ErrorCode } from '../common/error-code';
import { ServiceHeader } from '../common/service-header';
import { SidecarConfig } from './sidecar-config';
import { LOGGER } from '../logging/logging.module';
import { hashAdminToken } from '../decisions/secret-hash';
import { checkAnswer, protoJsonAnswer } from '../pdp/pdp-answers';
import { pdpRequestFromCheck, pdpRequestFromJson, traced } from '../pdp/pdp-request';
import { AdapterAuditDto } from '../pdp/pdp.dto';
import { PdpService } from '../pdp/pdp.service';
import { sendJson } from '../proxy/decision-headers';
import { readJsonBody } from '../proxy/request-body';
import { AuditWal } from './audit-wal';
import { BundleStore } from './bundle-store';
import { outcomeRecord } from '../decisions/outcome-record';
import { linkProblem } from '../decisions/decision-links';
import { RecentDecisions } from '../decisions/recent-decisions';
import { header, requestTraceId } from '../common/raw-request';

/** The adapter paths the sidecar serves like the gateway. */
export const SIDECAR_ADAPTER_PATHS: ReadonlySet<string> = new Set(['/v1/check', '/api/v1/pdp/evaluate', '/v1/audit']);

/**
 * The gateway's adapter interface at the edge (SPEC.md: clients switch by address alone):
 * `POST /v1/check` and `POST /api/v1/pdp/evaluate` through the gateway's own PdpService on the
 * sidecar's decision core, and `POST /v1/audit` into the audit buffer. Adapters authenticate with
 * their `X-Api-Key`, checked offline against the key hashes in the bundle. Answers leave once
 * their audit entry is on disk.
 */
@Injectable()
export class SidecarAdapterHandler {
  constructor(
    private readonly config: SidecarConfig,
    private readonly store: BundleStore,
    private readonly pdp: PdpService,
    private readonly wal: AuditWal,
    private readonly recent: RecentDecisions,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Serves one request to a SIDECAR_ADAPTER_PATHS path; never throws. */
  handle(request: IncomingMessage, response: ServerResponse, path: string): void {
    const traceId = requestTraceId(request);
    const headers = { [ServiceHeader.ClientTraceId]: traceId };
    this.answer(request, path, traceId).then(
      ({ status, body }) => sendJson(response, status, body, headers),
      (error: unknown) => {
        request.resume();
        const failure = errorBody(error, traceId);
        if (failure.unexpected) this.logger.error({ err: error, traceId, path }, 'adapter request failed');
        sendJson(response, failure.status, failure.body, headers);
      },
    );
  }

  private async answer(request: IncomingMessage, path: string, traceId: string): Promise<{ status: number; body: Record<string, unknown> }> {
    if (request.method !== 'POST') throw new AppError(ErrorCode.NotFound, `No route ${request.method} ${path}`);
    const failure = this.store.failure;
    if (failure !== null) throw new AppError(ErrorCode.ServiceUnavailable, `No valid policy bundle, so everything is denied: ${failure}`, { decision: 'deny', reason: failure });
    const orgId = this.authenticate(header(request, 'x-api-key'));
    const body = await readJsonBody(request, this.config.shared.http.maxJsonBytes);
    if (path === '/v1/audit') return { status: 202, body: await this.audit(orgId, body, traceId) };
    const answer =
      path === '/v1/check'
        ? checkAnswer(await this.pdp.evaluate(orgId, traced(pdpRequestFromCheck(body), traceId), 'check'))
        : protoJsonAnswer(await this.pdp.evaluate(orgId, traced(pdpRequestFromJson(body), traceId), 'pdp'));
    await this.wal.durable();
    return { status: 200, body: answer };
  }

  /** The bundle's organization, when the key is one of its live API keys. */
  private authenticate(apiKey: string | undefined): string {
    if (apiKey === undefined || apiKey === '') throw new AppError(ErrorCode.Unauthorized, 'Missing X-Api-Key');
    if (!this.store.hasApiKey(hashAdminToken(apiKey))) throw new AppError(ErrorCode.Unauthorized, 'Invalid or revoked API key');
    return this.store.bundle!.orgId;
  }

  private async audit(orgId: string, body: unknown, traceId: string): Promise<Record<string, unknown>> {
    // class-validator throws on null and answers arrays and primitives with a text naming no field.
    if (typeof body !== 'object' || body === null) throw new AppError(ErrorCode.InvalidJson, 'Request body is not valid JSON');
    if (Array.isArray(body)) throw AppError.invalid('body must be a JSON object');
    const event = plainToInstance(AdapterAuditDto, body);
    const problems = validateSync(event, { whitelist: true, forbidNonWhitelisted: true });
    // The gateway's ValidationPipe answer, word for word: clients switch by address alone.
    if (problems.length > 0) throw validationFailure(problems);
    const agent = await this.store.agentSource.get(event.agentId);
    if (agent === null || agent.orgId !== orgId) throw AppError.notFound('agent', event.agentId);
    // Only this sidecar's own decisions can be linked here: it has no other record of decisions.
    const problem = event.decisionId === undefined ? undefined : linkProblem(event.decisionId, orgId, this.recent.get(event.decisionId) ?? null, event);
    if (problem !== undefined) throw AppError.invalid(problem);
    this.wal.record(outcomeRecord(agent, event, traceId));
    await this.wal.durable();
    // Whether an eventId was seen before is known only at the gateway, which records it once.
    return { accepted: true, recorded: true };
  }

}

