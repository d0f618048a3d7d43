import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiExtension, ApiHeader, ApiSecurity, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { ErrorBody } from './error-body.dto';
import { ServiceHeader } from './service-header';

/** How a route authenticates; the global guard denies routes that declare none. */
export enum AuthKind {
  Public = 'public',
  /** An organization's admin token (`X-Admin-Token`). */
  Admin = 'admin',
  /** An agent's own token (`Authorization: Bearer <agent token>`). */
  Agent = 'agent',
  /** An agent-side adapter: `X-Api-Key`, or an identity-provider bearer token (managed identity). */
  Adapter = 'adapter',
  /** An admin token sent as `Authorization: Bearer <token>` (POST /billing/portal, docs/billing.md). */
  AdminBearer = 'admin-bearer',
}

export const AUTH_KIND = 'auth:kind';

/** Swagger security scheme names. */
export const ADMIN_TOKEN_SCHEME = 'admin-token';
export const AGENT_TOKEN_SCHEME = 'agent-token';
export const API_KEY_SCHEME = 'api-key';
export const ADMIN_BEARER_SCHEME = 'admin-bearer';

/** Marks a public operation in the OpenAPI document, which `declarePublicOperations` turns into `security: []`. */
export const PUBLIC_OPERATION_EXTENSION = 'x-public';

/** The route is open to everyone. */
export const Public = () => applyDecorators(SetMetadata(AUTH_KIND, AuthKind.Public), ApiExtension(PUBLIC_OPERATION_EXTENSION, true));

/** The route needs an organization's `X-Admin-Token`. */
export const AdminAuth = () =>
  applyDecorators(
    SetMetadata(AUTH_KIND, AuthKind.Admin),
    ApiSecurity(ADMIN_TOKEN_SCHEME),
    ApiUnauthorizedResponse({ description: `Missing or invalid ${ServiceHeader.AdminToken}`, type: ErrorBody }),
  );

/** The route needs an agent token. */
export const AgentAuth = () =>
  applyDecorators(
    SetMetadata(AUTH_KIND, AuthKind.Agent),
    ApiSecurity(AGENT_TOKEN_SCHEME),
    ApiUnauthorizedResponse({ description: 'Missing, invalid or expired agent token, or a revoked agent', type: ErrorBody }),
  );

/** The route serves agent-side adapters: `X-Api-Key` (or a managed-identity bearer token). */
export const AdapterAuth = () =>
  applyDecorators(
    SetMetadata(AUTH_KIND, AuthKind.Adapter),
    ApiSecurity(API_KEY_SCHEME),
    ApiUnauthorizedResponse({ description: `Missing or invalid ${ServiceHeader.ApiKey} (or managed-identity token)`, type: ErrorBody }),
  );

/** The route needs an organization's admin token as `Authorization: Bearer <token>`. */
export const AdminBearerAuth = () =>
  applyDecorators(
    SetMetadata(AUTH_KIND, AuthKind.AdminBearer),
    ApiSecurity(ADMIN_BEARER_SCHEME),
    ApiUnauthorizedResponse({ description: 'Missing or invalid admin token in Authorization: Bearer', type: ErrorBody }),
  );

/** Documents the optional client trace id header on a route. */
export const ApiTraceHeader = () =>
  ApiHeader({ name: ServiceHeader.ClientTraceId, required: false, description: 'Client trace id, echoed and recorded' });

/** The authenticated admin principal ({orgId, tokenId}) set by the guard. */
export const CurrentAdmin = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  return context.switchToHttp().getRequest<{ admin?: unknown }>().admin;
});

/** The authenticated agent ({agent, claims, delegation}) set by the guard. */
export const CurrentAgent = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  return context.switchToHttp().getRequest<{ agent?: unknown }>().agent;
});

/** The authenticated adapter ({orgId, credentialId}) set by the guard. */
export const CurrentAdapter = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  return context.switchToHttp().getRequest<{ adapter?: unknown }>().adapter;
});
