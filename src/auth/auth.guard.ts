import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { AppError } from '../common/app-error';
import { AUTH_KIND, AuthKind } from '../common/auth-decorators';
import { ErrorCode } from '../common/error-code';
import { OrganizationsService } from '../organizations/organizations.service';

/**
 * The one global guard of the HTTP API, deny by default: a route passes only if it declares
 * how it authenticates (`@Public()`, `@AdminAuth()`, `@AdminBearerAuth()`) and the request proves it.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly organizations: OrganizationsService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const kind = this.reflector.getAllAndOverride<AuthKind | undefined>(AUTH_KIND, [context.getHandler(), context.getClass()]);
    const request = context.switchToHttp().getRequest<Request>();
    switch (kind) {
      case AuthKind.Public:
        return true;
      case AuthKind.Admin:
        request.admin = await this.admin(request.header('x-admin-token'), 'Missing X-Admin-Token header');
        return true;
      case AuthKind.AdminBearer:
        request.admin = await this.admin(bearerToken(request.header('authorization')), 'Missing Authorization: Bearer <admin token> header');
        return true;
      default:
        throw new AppError(ErrorCode.Unauthorized, 'This route requires authentication');
    }
  }

  private async admin(token: string | undefined, missing: string) {
    if (token === undefined || token === '') throw new AppError(ErrorCode.Unauthorized, missing);
    const principal = await this.organizations.authenticate(token);
    if (principal === null) throw new AppError(ErrorCode.Unauthorized, 'Invalid admin token');
    return principal;
  }
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), else undefined. */
function bearerToken(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^Bearer +(\S+)\s*$/i.exec(header);
  return match?.[1];
}
