import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Metadata } from '@grpc/grpc-js';
import type { Request } from 'express';
import { AdapterAuthenticator, grpcAdapterCredentials } from '../access/adapter-authenticator';
import { AppError } from '../../core/common/app-error';
import type { AdminPrincipal } from '../common/admin-principal';
import { AUTH_KIND, AuthKind } from '../../core/common/auth-decorators';
import { ErrorCode } from '../../core/common/error-code';
import { setGrpcPrincipal } from './grpc-principal';
import { AgentAuthenticator } from '../../core/decision/agent-authenticator';
import { OrganizationsService } from '../organizations/organizations.service';
import { isSidecarToken, SIDECAR_TOKEN_ACCEPTED } from '../access/sidecar-token-access';
import { hashAdminToken } from '../../core/edge-protocol/secret-hash';
import { CallerCredentials } from '../organizations/caller-credentials';

/**
 * The one global guard, deny by default on every transport: an HTTP route or gRPC method passes
 * only if it declares how it authenticates (`@Public()`, `@AdminAuth()`, `@AdminBearerAuth()`,
 * `@AgentAuth()`, `@AdapterAuth()`) and the request proves it; any other context (a transport
 * this guard does not know) is refused.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly organizations: OrganizationsService,
    private readonly agents: AgentAuthenticator,
    private readonly adapters: AdapterAuthenticator,
    private readonly credentials: CallerCredentials,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const kind = this.reflector.getAllAndOverride<AuthKind | undefined>(AUTH_KIND, [context.getHandler(), context.getClass()]);
    switch (context.getType()) {
      case 'http': {
        const sidecarTokenAccepted = this.reflector.getAllAndOverride<boolean | undefined>(SIDECAR_TOKEN_ACCEPTED, [context.getHandler(), context.getClass()]) === true;
        return this.http(kind, context.switchToHttp().getRequest<Request>(), sidecarTokenAccepted);
      }
      case 'rpc':
        return this.grpc(kind, callMetadata(context));
      default:
        throw new AppError(ErrorCode.Unauthorized, `No authentication is defined for ${context.getType()} requests`);
    }
  }

  private async http(kind: AuthKind | undefined, request: Request, sidecarTokenAccepted: boolean): Promise<boolean> {
    switch (kind) {
      case AuthKind.Public:
        return true;
      case AuthKind.Admin:
        request.admin = await this.admin(request.header('x-admin-token'), 'Missing X-Admin-Token header', sidecarTokenAccepted);
        return true;
      case AuthKind.AdminBearer:
        request.admin = await this.admin(bearerToken(request.header('authorization')), 'Missing Authorization: Bearer <admin token> header');
        return true;
      case AuthKind.Agent:
        request.agent = await this.agents.authenticate(request.header('authorization'));
        return true;
      case AuthKind.Adapter:
        request.adapter = await this.adapters.authenticate({ apiKey: request.header('x-api-key'), authorization: request.header('authorization') });
        return true;
      default:
        throw new AppError(ErrorCode.Unauthorized, 'This route requires authentication');
    }
  }

  private async grpc(kind: AuthKind | undefined, metadata: Metadata): Promise<boolean> {
    if (kind !== AuthKind.Adapter) throw new AppError(ErrorCode.Unauthorized, 'This method requires authentication');
    setGrpcPrincipal(metadata, await this.adapters.authenticate(grpcAdapterCredentials(metadata)));
    return true;
  }

  /** An admin token's principal; on the sidecar's routes (`@SidecarTokenAccepted()`) a sidecar token's too. */
  private async admin(token: string | undefined, missing: string, sidecarTokenAccepted = false) {
    if (token === undefined || token === '') throw new AppError(ErrorCode.Unauthorized, missing);
    const sidecar = sidecarTokenAccepted && isSidecarToken(token) ? await this.sidecarToken(token) : null;
    const principal = sidecar ?? (await this.organizations.authenticate(token));
    if (principal !== null) return principal;
    if (isSidecarToken(token) && !sidecarTokenAccepted) throw new AppError(ErrorCode.Unauthorized, 'Invalid admin token (a sidecar token only fetches the bundle and ingests audit)');
    throw new AppError(ErrorCode.Unauthorized, 'Invalid admin token');
  }

  /**
   * The organization a live sidecar token acts for (`tokenId`: the token's id), or null. Looked
   * up on every call, unlike API keys and admin tokens: a revocation holds on every instance at once.
   */
  private async sidecarToken(token: string): Promise<AdminPrincipal | null> {
    const row = await this.credentials.findActive('sidecar_token', hashAdminToken(token));
    return row === null ? null : { orgId: row.orgId, tokenId: row.id };
  }
}

/** The call's metadata: the handler's second argument, or for a raw stream call (`@GrpcStreamCall`) the call's own. */
function callMetadata(context: ExecutionContext): Metadata {
  const rpc = context.switchToRpc();
  const metadata = rpc.getContext<Metadata | undefined>();
  if (metadata instanceof Metadata) return metadata;
  return rpc.getData<{ metadata: Metadata }>().metadata;
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), else undefined. */
function bearerToken(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^Bearer +(\S+)\s*$/i.exec(header);
  return match?.[1];
}
