import { SetMetadata } from '@nestjs/common';

/** What every sidecar token starts with (`newSecret`), so the guard looks one up only when it may be one. */
export const SIDECAR_TOKEN_PREFIX = 'sct_';

export const SIDECAR_TOKEN_ACCEPTED = 'auth:sidecar-token-accepted';

/**
 * On an `@AdminAuth()` route: `X-Admin-Token` may also hold a sidecar token. Only the two calls a
 * sidecar makes carry it (the bundle fetch, the audit ingest); every other admin route refuses
 * a sidecar token, so a token taken from a sidecar host cannot administer the organization.
 */
export const SidecarTokenAccepted = () => SetMetadata(SIDECAR_TOKEN_ACCEPTED, true);

export function isSidecarToken(token: string): boolean {
  return token.startsWith(SIDECAR_TOKEN_PREFIX);
}
