import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { AppError } from '../common/app-error';
import { AUTH_KIND, AuthKind } from '../common/auth-decorators';
import { ErrorCode } from '../common/error-code';
import { OrganizationsService } from '../organizations/organizations.service';

/**
 * The one global guard of the HTTP API, deny by default: a route passes only if it declares
 * how it authenticates (`@Public()`, `@AdminAuth()`) and the request proves it.
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
        request.admin = await this.admin(request.header('x-admin-token'));
        return true;
      default:
        throw new AppError(ErrorCode.Unauthorized, 'This route requires authentication');
    }
  }

  private async admin(token: string | undefined) {
    if (token === undefined || token === '') throw new AppError(ErrorCode.Unauthorized, 'Missing X-Admin-Token header');
    const principal = await this.organizations.authenticate(token);
    if (principal === null) throw new AppError(ErrorCode.Unauthorized, 'Invalid admin token');
    return principal;
  }
}
