import type { OpenAPIObject } from '@nestjs/swagger';
import type { OperationObject, ResponseObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { AGENT_TOKEN_SCHEME, API_KEY_SCHEME } from '../common/auth-decorators';
import { ServiceHeader } from '../common/service-header';

/*
 * The lean routes (src/core/http/lean-routes.ts) are served ahead of express, so Nest's scanner never
 * sees them: they are described here. Their request bodies are the schemas their parsers check
 * (pdp-request.ts `pdpRequestSchemas`: CheckRequest, PolicyRequestJson), their answers the DTOs
 * of pdp.dto.ts and ErrorBody; each app adds both to its document (swagger.ts, sidecar-swagger.ts).
 */

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: object) => ({ 'application/json': { schema } });
const oneOf = (names: string | string[]) => (typeof names === 'string' ? ref(names) : { oneOf: names.map(ref) });
const error = (description: string): ResponseObject => ({ description, content: json(ref('ErrorBody')) });

const TRACE_HEADER = { name: ServiceHeader.ClientTraceId, in: 'header' as const, required: false, description: 'Client trace id, echoed and recorded', schema: { type: 'string' } };
const RETRY_AFTER = { [ServiceHeader.RetryAfter]: { description: 'Seconds until a slot frees', schema: { type: 'integer' } } };

/** The answers every adapter endpoint may give besides its success. */
function adapterErrors(decides: boolean): Record<string, ResponseObject> {
  const answers: Record<string, ResponseObject> = {
    '400': error('A missing or malformed field, named in the message; `invalid_json` for a body that is not JSON'),
    '401': error('Missing, invalid or revoked API key (or managed-identity token)'),
    '404': error('No such agent in the caller’s organization'),
    '413': error('`payload_too_large`: a body over MAX_JSON_BYTES'),
    '415': error('`unsupported_media_type`: the body is not `application/json`'),
    '503': error('`service_unavailable`: the database (or, under a `rate_limit` rule, Redis) cannot be reached; at a sidecar, no valid policy bundle. Retry'),
  };
  if (decides) {
    answers['403'] = error('`forbidden`: the agent is revoked');
    answers['429'] = { ...error('`rate_limited` (a `rate_limit` condition tripped; recorded, with `retry_after`, `limit`, `policy`, `decisionId`) or `quota_exceeded` (the monthly policy checks are used up)'), headers: RETRY_AFTER };
  }
  return answers;
}

/** `body` and `ok`'s schema name a DTO schema, or several that the body or answer may be one of. */
function adapterOperation(operationId: string, summary: string, body: string | string[], ok: [string, string, string | string[]], decides: boolean): OperationObject {
  const [status, description, schema] = ok;
  return {
    operationId,
    tags: ['pdp'],
    summary,
    security: [{ [API_KEY_SCHEME]: [] }],
    parameters: [TRACE_HEADER],
    requestBody: { required: true, content: json(oneOf(body)) },
    responses: { [status]: { description, content: json(oneOf(schema)) }, ...adapterErrors(decides) },
  };
}

/** The proxy's answers: the upstream's own, or the gateway's refusals. */
function proxyOperation(method: string): OperationObject {
  return {
    operationId: `proxy${method[0].toUpperCase()}${method.slice(1)}`,
    tags: ['proxy'],
    summary: `${method.toUpperCase()} through the governed proxy to UPSTREAM_URL/<path>`,
    description:
      'The agent token names the agent; the request becomes the action `<verb>:<path>` (X-Service-Action may name another, decided too), its query and body ' +
      'the args policies read. Allowed: forwarded, streaming both ways, the answer carries X-Service-Decision, -Policy, -Trace-Id, -Agent-Id.',
    security: [{ [AGENT_TOKEN_SCHEME]: [] }],
    parameters: [
      { name: 'path', in: 'path', required: true, description: 'The upstream path', schema: { type: 'string' } },
      TRACE_HEADER,
      { name: 'X-Service-Action', in: 'header', required: false, description: 'The action the agent says it performs; decided together with the request’s own', schema: { type: 'string' } },
    ],
    responses: {
      '2XX': { description: 'The upstream’s answer, relayed' },
      '400': error('A malformed path or body a policy reads'),
      '401': error('`unauthorized`: missing, invalid, expired or revoked agent token'),
      '403': error('`forbidden`: denied by policy (`reason`, `policy`, `action`, `trace_id`)'),
      '413': error('`payload_too_large`: a body over PROXY_MAX_BODY_BYTES, or over MAX_JSON_BYTES when a policy reads it'),
      '429': { ...error('`rate_limited` (`retry_after`, `limit`) or `quota_exceeded`'), headers: RETRY_AFTER },
      '502': error('`no_upstream` (UPSTREAM_URL unset), or the upstream could not be reached or sent an invalid response'),
      '503': error('`service_unavailable`: the database or Redis cannot be reached; retry'),
      '504': error('`gateway_timeout`: the upstream did not answer within UPSTREAM_TIMEOUT_MS'),
    },
  };
}

/** Adds the adapter endpoints to an OpenAPI document. */
export function addAdapterRoutes(document: OpenAPIObject): void {
  document.paths['/v1/check'] = {
    post: adapterOperation('check', 'Pre-invocation permission check for a tool call (recorded, source `check`)', 'CheckRequest', ['200', 'The decision', 'CheckAnswerDto'], true),
  };
  document.paths['/api/v1/pdp/evaluate'] = {
    post: adapterOperation(
      'evaluate',
      'PDP HTTP fallback: PolicyRequest in, PolicyResponse out (proto3 JSON; source `pdp`)',
      'PolicyRequestJson',
      ['200', 'The decision', 'PolicyResponseJsonDto'],
      true,
    ),
  };
  document.paths['/v1/audit'] = {
    post: adapterOperation(
      'recordAudit',
      'Post-invocation audit entries: one event (the call, its decision, duration and result summary, linked to its decision), or a batch `{events}` of 1-500, ' +
        'refused whole (400 naming `events.<index>.<field>`) when any event is invalid; idempotent per eventId; `cached: true` records a decision the SDK applied from its cache',
      ['AdapterAuditDto', 'AdapterAuditBatchDto'],
      ['202', 'Accepted: one event `{accepted: true, recorded}` (`recorded: false` for a replayed eventId); a batch `{accepted, duplicates}`', ['AuditAcceptedDto', 'AuditBatchAcceptedDto']],
      false,
    ),
  };
}

/** Adds `/proxy/{path}` to an OpenAPI document. */
export function addProxyRoutes(document: OpenAPIObject): void {
  document.paths['/proxy/{path}'] = Object.fromEntries(['get', 'post', 'put', 'patch', 'delete'].map((method) => [method, proxyOperation(method)]));
}
