import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { AGENT_TOKEN_SCHEME, API_KEY_SCHEME } from '../core/common/auth-decorators';
import { ServiceHeader } from '../core/common/service-header';
import { ErrorBody } from '../core/common/error-body.dto';
import { addAdapterRoutes, addProxyRoutes } from '../core/http/lean-routes.openapi';
import { pdpRequestSchemas } from '../core/pdp/pdp-request';
import { AdapterAuditBatchDto, AdapterAuditDto, AuditAcceptedDto, AuditBatchAcceptedDto, CheckAnswerDto, PolicyResponseJsonDto } from '../core/pdp/pdp.dto';

const json = (schema: object) => ({ 'application/json': { schema } });
const errorBody = { $ref: '#/components/schemas/ErrorBody' };

const ENFORCE_ITEM = {
  type: 'object',
  required: ['action'],
  properties: {
    action: { type: 'string', example: 'read:docs/report.pdf' },
    resource: { type: 'string' },
    context: { type: 'object', description: '`plugin`, `function` and `args` are read as the decision input’s; the rest as `context.*` (the caller’s claim)' },
    approvalId: { type: 'string', description: 'The approval a retry of a held action presents (docs/approvals.md)' },
  },
};
const ANSWER = {
  type: 'object',
  properties: {
    decision: { type: 'string', enum: ['allow', 'deny', 'pending'] },
    policy: { type: 'string' },
    rule: { type: 'string', nullable: true },
    reason: { type: 'string', description: 'On a denial' },
    wouldDeny: { type: 'boolean', description: 'MODE=audit: a denial that was let through' },
    approvalId: { type: 'string', description: 'Pending: the approval to retry with once a person approved it' },
    expiresAt: { type: 'string', description: 'Pending: when the approval expires' },
    latencyMs: { type: 'number' },
    decisionId: { type: 'string' },
    bundleVersion: { type: 'string' },
    mode: { type: 'string', enum: ['enforce', 'audit'] },
    traceId: { type: 'string' },
  },
};

/** Serves the sidecar's Swagger UI at /docs and its OpenAPI document at /docs-json. */
export function setupSidecarSwagger(app: INestApplication, version: string): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('Agent Governance Service: edge sidecar')
    .setDescription('Local decisions from the signed, cached policy bundle (docs/sidecar.md). Agents call `/enforce` and `/proxy/*` with their agent token; adapters call the PDP endpoints with an API key of the bundle’s organization.')
    .setVersion(version)
    .addServer('/', 'This sidecar')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, AGENT_TOKEN_SCHEME)
    .addApiKey({ type: 'apiKey', in: 'header', name: ServiceHeader.ApiKey }, API_KEY_SCHEME)
    .build();
  const document = SwaggerModule.createDocument(app, builder, { extraModels: [CheckAnswerDto, PolicyResponseJsonDto, AdapterAuditDto, AdapterAuditBatchDto, AuditAcceptedDto, AuditBatchAcceptedDto, ErrorBody] });
  const refusals = {
    '400': { description: 'A malformed body, named in the message', content: json(errorBody) },
    '401': { description: 'Missing, invalid, expired or revoked agent token', content: json(errorBody) },
    '403': { description: 'The body’s agentId is not the token’s agent', content: json(errorBody) },
    '429': { description: '`rate_limited`: a `rate_limit` condition tripped (`retry_after`, `limit`, `policy`, `decisionId`; Retry-After)', content: json(errorBody) },
    '503': { description: 'No valid policy bundle: every decision is refused (fail closed)', content: json(errorBody) },
  };
  document.paths['/enforce'] = {
    post: {
      operationId: 'enforce',
      tags: ['sidecar'],
      summary: 'One decision from the cached bundle',
      security: [{ [AGENT_TOKEN_SCHEME]: [] }],
      requestBody: { required: true, content: json({ ...ENFORCE_ITEM, properties: { agentId: { type: 'string' }, ...ENFORCE_ITEM.properties } }) },
      responses: {
        '200': { description: 'The decision (a denial too)', content: json(ANSWER) },
        '202': { description: '`pending`: a `require_approval` rule holds the action (`approvalId`, `expiresAt`)', content: json(ANSWER) },
        ...refusals,
      },
    },
  };
  document.paths['/enforce/batch'] = {
    post: {
      operationId: 'enforceBatch',
      tags: ['sidecar'],
      summary: 'Several decisions at once; a tripped rate limit is reported per item (`rateLimited`, `retryAfter`)',
      security: [{ [AGENT_TOKEN_SCHEME]: [] }],
      requestBody: { required: true, content: json({ type: 'object', required: ['actions'], properties: { agentId: { type: 'string' }, actions: { type: 'array', items: ENFORCE_ITEM } } }) },
      responses: { '200': { description: '`results` (one per action), `allAllowed`, `latencyMs`', content: json({ type: 'object' }) }, ...refusals },
    },
  };
  document.paths['/health'] = {
    get: {
      operationId: 'health',
      tags: ['sidecar'],
      summary: 'Status, mode, bundle version and age, last sync, gateway reachability, cached policies and agents, uptime; with METRICS_TOKEN as a bearer token also the sidecar id, sync errors, why it fails closed and the audit buffer',
      security: [],
      responses: {
        '200': { description: 'Deciding (healthy or degraded)', content: json({ type: 'object' }) },
        '401': { description: 'A bearer token that is not METRICS_TOKEN', content: json(errorBody) },
        '503': { description: '`fail_closed`: no valid bundle', content: json({ type: 'object' }) },
      },
    },
  };
  document.paths['/v1/approvals/{id}'] = {
    get: {
      operationId: 'getApproval',
      tags: ['sidecar'],
      summary: 'Where an approval stands (pending, approved, rejected, expired, used), asked of the gateway, for an adapter that waits for it (docs/approvals.md)',
      security: [{ [API_KEY_SCHEME]: [] }],
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', example: 'appr_3f9a0c1b2d4e5f6a7b8c9d0e' } }],
      responses: {
        '200': { description: '`{id, status, expiresAt}`', content: json({ type: 'object', properties: { id: { type: 'string' }, status: { type: 'string', enum: ['pending', 'approved', 'rejected', 'expired', 'used'] }, expiresAt: { type: 'string' } } }) },
        '401': { description: 'Missing or invalid API key', content: json(errorBody) },
        '404': { description: 'No such approval in the organization', content: json(errorBody) },
        '503': { description: 'The gateway cannot be reached (approvals are kept there), or no valid bundle', content: json(errorBody) },
      },
    },
  };
  Object.assign(document.components!.schemas!, pdpRequestSchemas());
  addAdapterRoutes(document);
  addProxyRoutes(document);
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs-json' });
  return document;
}
