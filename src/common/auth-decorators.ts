import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiHeader, ApiSecurity, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { ErrorBody } from './error-body.dto';
import { ServiceHeader } from './service-header';

/** How a route authenticates; the global guard denies routes that declare none. */
export enum AuthKind {
  Public = 'public',
  Admin = 'admin',
  /** An admin token sent as `Authorization: Bearer <token>` (SPEC.md: POST /billing/portal). */
  AdminBearer = 'admin-bearer',
}

export const AUTH_KIND = 'auth:kind';

/** Swagger security scheme names. */
export const ADMIN_TOKEN_SCHEME = 'admin-token';
export const AGENT_TOKEN_SCHEME = 'agent-token';
export const ADMIN_BEARER_SCHEME = 'admin-bearer';

/** The route is open to everyone. */
export const Public = () => SetMetadata(AUTH_KIND, AuthKind.Public);

/** The route needs an organization's `X-Admin-Token`. */
export const AdminAuth = () =>
  applyDecorators(
    SetMetadata(AUTH_KIND, AuthKind.Admin),
    ApiSecurity(ADMIN_TOKEN_SCHEME),
    ApiUnauthorizedResponse({ description: `Missing or invalid ${ServiceHeader.AdminToken}`, type: ErrorBody }),
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
