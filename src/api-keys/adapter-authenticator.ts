import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { AdapterPrincipal, ApiKeysService } from './api-keys.service';

/** What an adapter presents: `X-Api-Key`, or `Authorization: Bearer` from its identity provider. */
export interface AdapterCredentials {
  apiKey?: string;
  authorization?: string;
}

/** Authenticates agent-side adapters, for the auth guard (HTTP and gRPC) and the lean PDP path alike. */
@Injectable()
export class AdapterAuthenticator {
  constructor(private readonly apiKeys: ApiKeysService) {}

  /** The adapter's organization, or a 401 AppError. */
  async authenticate({ apiKey, authorization }: AdapterCredentials): Promise<AdapterPrincipal> {
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
