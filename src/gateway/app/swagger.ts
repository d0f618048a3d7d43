import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { AppConfig } from '../../core/config/app-config';
import { ADMIN_BEARER_SCHEME, ADMIN_TOKEN_SCHEME, AGENT_TOKEN_SCHEME, API_KEY_SCHEME } from '../../core/common/auth-decorators';
import { ServiceHeader } from '../../core/common/service-header';
import { ErrorBody } from '../../core/common/error-body.dto';
import { AdapterAuditBatchDto, AdapterAuditDto, AuditAcceptedDto, AuditBatchAcceptedDto, CheckAnswerDto, PolicyResponseJsonDto } from '../../core/pdp/pdp.dto';
import { addAdapterRoutes, addProxyRoutes } from '../../core/http/lean-routes.openapi';
import { pdpRequestSchemas } from '../../core/pdp/pdp-request';
import { declarePublicOperations } from './public-operations';

/** Serves Swagger UI at /docs and the OpenAPI document at /docs-json. */
export function setupSwagger(app: INestApplication, config: AppConfig): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('Agent Governance Service')
    .setDescription(
      'Identity, policy and audit for AI agents. Admin and analytics routes take `X-Admin-Token`; ' +
        'agents call `/proxy/*` with `Authorization: Bearer <agent token>`; agent-side adapters call the PDP ' +
        '(`/api/v1/pdp/evaluate`, `/v1/check`, `/v1/audit`) with `X-Api-Key`. Errors are `{error, message}`.',
    )
    .setVersion(config.version)
    .addServer(config.http.publicUrl, 'This gateway (PUBLIC_URL)')
    .addApiKey({ type: 'apiKey', in: 'header', name: ServiceHeader.AdminToken }, ADMIN_TOKEN_SCHEME)
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, AGENT_TOKEN_SCHEME)
    .addApiKey({ type: 'apiKey', in: 'header', name: ServiceHeader.ApiKey }, API_KEY_SCHEME)
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'admin token', description: 'An admin token (POST /billing/portal)' }, ADMIN_BEARER_SCHEME)
    .build();
  const document = SwaggerModule.createDocument(app, builder, { extraModels: [CheckAnswerDto, PolicyResponseJsonDto, AdapterAuditDto, AdapterAuditBatchDto, AuditAcceptedDto, AuditBatchAcceptedDto, ErrorBody] });
  Object.assign(document.components!.schemas!, pdpRequestSchemas());
  addAdapterRoutes(document);
  addProxyRoutes(document);
  declarePublicOperations(document);
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs-json', yamlDocumentUrl: 'docs-yaml' });
  return document;
}
