import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Metadata } from '@grpc/grpc-js';
import type { Request } from 'express';
import { AdapterPrincipal, ApiKeysService } from '../api-keys/api-keys.service';
import { AppError } from '../common/app-error';
import { AUTH_KIND, AuthKind } from '../common/auth-decorators';
import { ErrorCode } from '../common/error-code';
import { setGrpcPrincipal } from '../common/grpc-principal';
import { AgentAuthenticator } from '../identity/agent-authenticator';
import { OrganizationsService } from '../organizations/organizations.service';

/** The credentials a request presents, whatever its transport. */
interface Credentials {
  adminToken?: string;
  apiKey?: string;
  authorization?: string;
}

/**
 * The one global guard, deny by default on every transport: an HTTP route or gRPC method passes
 * only if it declares how it authenticates (`@Public()`, `@AdminAuth()`, `@AgentAuth()`,
 * `@AdapterAuth()`) and the request proves it; any other context (a transport this guard does
 * not know) is refused.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly organizations: OrganizationsService,
    private readonly agents: AgentAuthenticator,
    private readonly apiKeys: ApiKeysService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const kind = this.reflector.getAllAndOverride<AuthKind | undefined>(AUTH_KIND, [context.getHandler(), context.getClass()]);
    switch (context.getType()) {
      case 'http':
        return this.http(kind, context.switchToHttp().getRequest<Request>());
      case 'rpc':
        return this.grpc(kind, context.switchToRpc().getContext<Metadata>());
      default:
        throw new AppError(ErrorCode.Unauthorized, `No authentication is defined for ${context.getType()} requests`);
    }
  }

  private async http(kind: AuthKind | undefined, request: Request): Promise<boolean> {
    const credentials: Credentials = { adminToken: request.header('x-admin-token'), apiKey: request.header('x-api-key'), authorization: request.header('authorization') };
    switch (kind) {
      case AuthKind.Public:
        return true;
      case AuthKind.Admin:
        request.admin = await this.admin(credentials.adminToken);
        return true;
      case AuthKind.Agent:
        request.agent = await this.agents.authenticate(credentials.authorization);
        return true;
      case AuthKind.Adapter:
        request.adapter = await this.adapter(credentials);
        return true;
      default:
        throw new AppError(ErrorCode.Unauthorized, 'This route requires authentication');
    }
  }

  private async grpc(kind: AuthKind | undefined, metadata: Metadata): Promise<boolean> {
    if (kind !== AuthKind.Adapter) throw new AppError(ErrorCode.Unauthorized, 'This method requires authentication');
    setGrpcPrincipal(metadata, await this.adapter({ apiKey: first(metadata.get('x-api-key')), authorization: first(metadata.get('authorization')) }));
    return true;
  }

  private async admin(token: string | undefined) {
    if (token === undefined || token === '') throw new AppError(ErrorCode.Unauthorized, 'Missing X-Admin-Token header');
    const principal = await this.organizations.authenticate(token);
    if (principal === null) throw new AppError(ErrorCode.Unauthorized, 'Invalid admin token');
    return principal;
  }

  private async adapter({ apiKey, authorization }: Credentials): Promise<AdapterPrincipal> {
    if (apiKey !== undefined && apiKey !== '') {
      const principal = await this.apiKeys.authenticate(apiKey);
      if (principal === null) throw new AppError(ErrorCode.Unauthorized, 'Invalid or revoked API key');
      return principal;
    }
    if (authorization !== undefined && authorization !== '') {
      throw new AppError(ErrorCode.Unauthorized, 'Managed-identity bearer tokens are not enabled (OIDC_ISSUER is not set)');
    }
    throw new AppError(ErrorCode.Unauthorized, 'Missing X-Api-Key (or a managed-identity bearer token)');
  }
}

function first(values: Array<string | Buffer>): string | undefined {
  const value = values[0];
  return typeof value === 'string' ? value : undefined;
}
