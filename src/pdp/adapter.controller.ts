import { Body, Controller, HttpCode, Post, type RawBodyRequest, Req } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBadRequestResponse, ApiBody, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags, ApiTooManyRequestsResponse } from '@nestjs/swagger';
import type { Request } from 'express';
import type { AdapterPrincipal } from '../api-keys/api-keys.service';
import { AdapterAuth, ApiTraceHeader, CurrentAdapter } from '../common/auth-decorators';
import { ErrorBody } from '../common/error-body.dto';
import { AdapterAuditService } from './adapter-audit.service';
import { checkAnswer, protoJsonAnswer } from './pdp-answers';
import { pdpRequestFromCheck, pdpRequestFromJson, traced } from './pdp-request';
import { AdapterAuditDto, AuditAcceptedDto, CheckAnswerDto, CheckRequestDto, PolicyRequestJsonDto, PolicyResponseJsonDto } from './pdp.dto';
import { PdpService } from './pdp.service';

/**
 * The PDP over HTTP for agent-side adapters. `/v1/check` and `/api/v1/pdp/evaluate` are served
 * on the lean path by PdpHttpHandler ahead of express; these handlers document them and answer
 * identically where that path is not mounted. `/v1/audit` is served here.
 */
@ApiTags('pdp')
@AdapterAuth()
@ApiTraceHeader()
@Controller()
export class AdapterController {
  constructor(
    private readonly pdp: PdpService,
    private readonly outcomes: AdapterAuditService,
  ) {}

  @Post('v1/check')
  @HttpCode(200)
  @ApiOperation({ summary: 'Pre-invocation permission check for a tool call (recorded, source `check`)' })
  @ApiBody({ type: CheckRequestDto })
  @ApiOkResponse({ type: CheckAnswerDto })
  @ApiBadRequestResponse({ description: 'A missing or malformed field, named in the message', type: ErrorBody })
  @ApiNotFoundResponse({ description: 'No such agent in the caller’s organization', type: ErrorBody })
  @ApiTooManyRequestsResponse({ description: 'rate_limited (a rate_limit condition; recorded) or quota_exceeded', type: ErrorBody })
  async check(@CurrentAdapter() adapter: AdapterPrincipal, @Body() body: unknown, @Req() request: Request): Promise<Record<string, unknown>> {
    return checkAnswer(await this.pdp.evaluate(adapter.orgId, traced(pdpRequestFromCheck(body), request.traceId), 'check'));
  }

  @Post('api/v1/pdp/evaluate')
  @HttpCode(200)
  @ApiOperation({ summary: 'PDP HTTP fallback: PolicyRequest in, PolicyResponse out (proto3 JSON; source `pdp`)' })
  @ApiBody({ type: PolicyRequestJsonDto })
  @ApiOkResponse({ type: PolicyResponseJsonDto })
  @ApiBadRequestResponse({ description: 'A missing or malformed field, named in the message', type: ErrorBody })
  @ApiNotFoundResponse({ description: 'No such agent in the caller’s organization', type: ErrorBody })
  @ApiTooManyRequestsResponse({ description: 'rate_limited (a rate_limit condition; recorded) or quota_exceeded', type: ErrorBody })
  async evaluate(@CurrentAdapter() adapter: AdapterPrincipal, @Body() body: unknown, @Req() request: Request): Promise<Record<string, unknown>> {
    return protoJsonAnswer(await this.pdp.evaluate(adapter.orgId, traced(pdpRequestFromJson(body), request.traceId), 'pdp'));
  }

  @Post('v1/audit')
  @HttpCode(202)
  @ApiOperation({ summary: 'Post-invocation audit entry: the call, its decision, duration and result summary; idempotent on eventId' })
  @ApiAcceptedResponse({ type: AuditAcceptedDto })
  @ApiBadRequestResponse({ description: 'A missing or malformed field, named in the message', type: ErrorBody })
  @ApiNotFoundResponse({ description: 'No such agent in the caller’s organization', type: ErrorBody })
  async audit(@CurrentAdapter() adapter: AdapterPrincipal, @Body() event: AdapterAuditDto, @Req() request: RawBodyRequest<Request>): Promise<AuditAcceptedDto> {
    return { accepted: true, recorded: await this.outcomes.record(adapter, { ...event, arguments: sentArguments(request, event) }, request.traceId) };
  }
}

/**
 * `arguments` as the client sent it, from the raw body: the ValidationPipe deletes `__proto__`,
 * `prototype` and `constructor` keys at every depth of the parsed body, which would let a caller
 * keep an argument out of the audit trail. The DTO has already checked that it is an object.
 */
function sentArguments(request: RawBodyRequest<Request>, event: AdapterAuditDto): Record<string, unknown> | undefined {
  if (event.arguments === undefined || request.rawBody === undefined) return event.arguments;
  return (JSON.parse(request.rawBody.toString('utf8')) as { arguments: Record<string, unknown> }).arguments;
}
