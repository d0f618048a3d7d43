import { Injectable } from '@nestjs/common';
import type { Metadata } from '@grpc/grpc-js';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { OidcVerifier } from './oidc-verifier';
import { hashAdminToken } from '../../core/edge-protocol/secret-hash';
import { AdapterPrincipal, ApiKeysService } from './api-keys.service';
import type { AdapterAuthentication, AdapterCredentials } from '../../core/decision/adapter-ports';

/**
 * Authenticates agent-side adapters on the gateway (API keys in PostgreSQL, managed identities
 * of OIDC_ISSUER), for the auth guard (HTTP and gRPC) and the adapter endpoints alike.
 */
@Injectable()
export class AdapterAuthenticator implements AdapterAuthentication {
  constructor(
    private readonly apiKeys: ApiKeysService,
    private readonly oidc: OidcVerifier,
  ) {}

  /** The adapter's organization, or a 401 AppError. */
  async authenticate({ apiKey, authorization }: AdapterCredentials): Promise<AdapterPrincipal> {
    if (apiKey !== undefined && apiKey !== '') {
      const principal = await this.apiKeys.authenticate(apiKey);
      if (principal === null) throw new AppError(ErrorCode.Unauthorized, 'Invalid or revoked API key');
      return principal;
    }
    if (authorization !== undefined && authorization !== '') {
      if (!/^bearer\s+\S/i.test(authorization)) throw new AppError(ErrorCode.Unauthorized, 'Authorization must be: Bearer <managed-identity token>');
      const identity = await this.oidc.verify(authorization);
      return { orgId: identity.orgId, credentialId: identity.subject, expiresMs: identity.expiresMs };
    }
    throw new AppError(ErrorCode.Unauthorized, 'Missing X-Api-Key (or a managed-identity bearer token)');
  }

  /**
   * A check of a long-lived call's credential (a gRPC stream) cheap enough for every message: an
   * API key is looked up in the key cache by the hash taken once here (a revocation evicts it on
   * every instance); a managed-identity token, verified once, is held to its expiry (such a token
   * cannot be revoked, and verifying its signature per message would cost more than the decision).
   */
  async recheckOf(credentials: AdapterCredentials): Promise<() => Promise<AdapterPrincipal>> {
    const { apiKey } = credentials;
    if (apiKey !== undefined && apiKey !== '') {
      const hash = hashAdminToken(apiKey);
      return async () => {
        const principal = await this.apiKeys.authenticateHash(hash);
        if (principal === null) throw new AppError(ErrorCode.Unauthorized, 'Invalid or revoked API key');
        return principal;
      };
    }
    const principal = await this.authenticate(credentials);
    return async () => {
      if (principal.expiresMs !== undefined && principal.expiresMs <= Date.now()) throw new AppError(ErrorCode.Unauthorized, 'Token has expired');
      return principal;
    };
  }
}

/** The credentials in a gRPC call's metadata, for the guard and for the per-message checks of streams. */
export function grpcAdapterCredentials(metadata: Metadata): AdapterCredentials {
  return { apiKey: first(metadata.get('x-api-key')), authorization: first(metadata.get('authorization')) };
}

function first(values: Array<string | Buffer>): string | undefined {
  const value = values[0];
  return typeof value === 'string' ? value : undefined;
}
