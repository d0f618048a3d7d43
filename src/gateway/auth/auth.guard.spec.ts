import type { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Metadata } from '@grpc/grpc-js';
import type { AdapterAuthenticator } from '../access/adapter-authenticator';
import { AppError } from '../../core/common/app-error';
import { AUTH_KIND, AuthKind } from '../../core/common/auth-decorators';
import { ErrorCode } from '../../core/common/error-code';
import { grpcPrincipal } from './grpc-principal';
import type { AgentAuthenticator } from '../../core/decision/agent-authenticator';
import type { OrganizationsService } from '../organizations/organizations.service';
import type { CallerCredentials } from '../organizations/caller-credentials';
import { AuthGuard } from './auth.guard';

/** A handler as Nest hands it to guards: its declared credential kind, its transport and its arguments. */
function context(type: string, kind: AuthKind | undefined, args: unknown[]): ExecutionContext {
  const handler = () => undefined;
  if (kind !== undefined) Reflect.defineMetadata(AUTH_KIND, kind, handler);
  return {
    getType: () => type,
    getHandler: () => handler,
    getClass: () => class {},
    getArgs: () => args,
    switchToHttp: () => ({ getRequest: () => args[0] }),
    switchToRpc: () => ({ getData: () => args[0], getContext: () => args[1] }),
  } as unknown as ExecutionContext;
}

describe('AuthGuard', () => {
  const adapters = {
    authenticate: async ({ apiKey }: { apiKey?: string }) => {
      if (apiKey === 'good') return { orgId: 'org_a', credentialId: 'key_a' };
      throw new AppError(ErrorCode.Unauthorized, 'Invalid or revoked API key');
    },
  } as unknown as AdapterAuthenticator;
  const guard = new AuthGuard(new Reflector(), {} as OrganizationsService, {} as AgentAuthenticator, adapters, {} as CallerCredentials);

  it('refuses a transport it has no authentication for', async () => {
    await expect(guard.canActivate(context('ws', AuthKind.Public, [{}]))).rejects.toMatchObject({ code: 'unauthorized', message: 'No authentication is defined for ws requests' });
  });

  it('refuses an HTTP route and a gRPC method that declare no credential', async () => {
    await expect(guard.canActivate(context('http', undefined, [{ header: () => undefined }]))).rejects.toMatchObject({ code: 'unauthorized' });
    await expect(guard.canActivate(context('rpc', undefined, [{}, new Metadata()]))).rejects.toMatchObject({ code: 'unauthorized' });
    await expect(guard.canActivate(context('rpc', AuthKind.Public, [{}, new Metadata()]))).rejects.toMatchObject({ code: 'unauthorized' });
  });

  it('proves a gRPC adapter from unary metadata and from a stream call’s own metadata', async () => {
    const unary = new Metadata();
    unary.set('x-api-key', 'good');
    await expect(guard.canActivate(context('rpc', AuthKind.Adapter, [{}, unary]))).resolves.toBe(true);
    expect(grpcPrincipal(unary)).toEqual({ orgId: 'org_a', credentialId: 'key_a' });

    const streamed = new Metadata();
    streamed.set('x-api-key', 'good');
    await expect(guard.canActivate(context('rpc', AuthKind.Adapter, [{ metadata: streamed }, undefined]))).resolves.toBe(true);
    expect(grpcPrincipal(streamed).orgId).toBe('org_a');

    const wrong = new Metadata();
    wrong.set('x-api-key', 'bad');
    await expect(guard.canActivate(context('rpc', AuthKind.Adapter, [{}, wrong]))).rejects.toMatchObject({ message: 'Invalid or revoked API key' });
  });
});
