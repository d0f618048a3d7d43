import { AppError } from '../../core/common/app-error';
import type { ManagedIdentity, OidcVerifier } from './oidc-verifier';
import { hashAdminToken } from '../../core/edge-protocol/secret-hash';
import { AdapterAuthenticator } from './adapter-authenticator';
import type { AdapterPrincipal, ApiKeysService } from './api-keys.service';

/** Stand-ins for the key store and the identity provider: what is tested is the per-message check of a stream. */
function authenticator(keys: Map<string, AdapterPrincipal>, identity?: ManagedIdentity): { adapters: AdapterAuthenticator; verified: () => number } {
  let verifications = 0;
  const apiKeys = { authenticateHash: (hash: string) => Promise.resolve(keys.get(hash) ?? null) } as unknown as ApiKeysService;
  apiKeys.authenticate = (key: string) => apiKeys.authenticateHash(hashAdminToken(key));
  const oidc = {
    verify: () => {
      verifications++;
      return Promise.resolve(identity);
    },
  } as unknown as OidcVerifier;
  return { adapters: new AdapterAuthenticator(apiKeys, oidc), verified: () => verifications };
}

async function failure(check: () => Promise<unknown>): Promise<string> {
  const error = await check().then(
    () => new Error('the check passed'),
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof AppError)) throw error;
  return `${error.status} ${error.message}`;
}

describe('AdapterAuthenticator.recheckOf (the check of each message of a stream)', () => {
  it('passes while the API key is known and fails once it is revoked', async () => {
    const keys = new Map([[hashAdminToken('agk_live'), { orgId: 'org_1', credentialId: 'key_1' }]]);
    const recheck = await authenticator(keys).adapters.recheckOf({ apiKey: 'agk_live' });
    expect(await recheck()).toEqual({ orgId: 'org_1', credentialId: 'key_1' });
    keys.clear();
    expect(await failure(recheck)).toBe('401 Invalid or revoked API key');
  });

  it('verifies a managed-identity token once and holds it to its expiry', async () => {
    const identity = { orgId: 'org_1', subject: 'mi-1', clientId: 'client', expiresMs: Date.now() + 80 };
    const { adapters, verified } = authenticator(new Map(), identity);
    const recheck = await adapters.recheckOf({ authorization: 'Bearer eyJ.token' });
    expect(await recheck()).toMatchObject({ orgId: 'org_1', credentialId: 'mi-1' });
    expect(await recheck()).toMatchObject({ orgId: 'org_1' });
    expect(verified()).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await failure(recheck)).toBe('401 Token has expired');
  });

  it('refuses at once a call without a credential', async () => {
    expect(await failure(() => authenticator(new Map()).adapters.recheckOf({}))).toBe('401 Missing X-Api-Key (or a managed-identity bearer token)');
  });
});
