import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../core/config/app-config';
import { boundTo, sealValue } from './credential-cipher';

/** Seals a new or rotated credential value with the current key (CREDENTIALS_KEY_FILE), for the API and the `ags` tool alike. */
@Injectable()
export class CredentialSealer {
  constructor(private readonly config: AppConfig) {}

  /** Seals a value for row `id` of `orgId`; throws KeyMissing when no key is configured. */
  seal(id: string, orgId: string, value: string): { sealed: Buffer; keyId: string } {
    const key = this.config.credentialKeys.current;
    if (key === undefined) throw new KeyMissing();
    return { sealed: sealValue(key, value, boundTo(id, orgId)), keyId: key.id };
  }
}

/** Thrown when a credential is stored while no key is configured. */
export class KeyMissing extends Error {
  constructor() {
    super('The upstream credential store has no key: set CREDENTIALS_KEY_FILE (or CREDENTIALS_KEY) to 32 random bytes (docs/configuration.md)');
  }
}
