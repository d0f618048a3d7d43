import { ClusterEvents } from '../changes/cluster-events';
import { AppConfig } from '../../core/config/app-config';
import { DatabaseConnection } from '../database/database-connection';
import type { CallerCredential } from '../organizations/caller-credential.entity';
import type { CallerCredentials } from '../organizations/caller-credentials';
import { ApiKeysService } from './api-keys.service';

/**
 * The cache guard against a revocation that lands while a key's row is being read. The order is
 * forced by holding the row read open, which no e2e run can do deterministically. The database
 * is a table of rows behind the credential store's findActive; ClusterEvents is the real class with no
 * cross-instance transport (as on the embedded database).
 */
describe('ApiKeysService.authenticate', () => {
  const row = { id: 'key_1', orgId: 'org_1', revokedAt: null as Date | null };
  let releaseRead: () => void = () => undefined;
  let holdReads = false;

  function service(events: ClusterEvents): ApiKeysService {
    const credentials = {
      findActive: async () => {
        const found = row.revokedAt === null ? ({ ...row } as CallerCredential) : null;
        if (holdReads) await new Promise<void>((resolve) => (releaseRead = resolve));
        return found;
      },
    } as unknown as CallerCredentials;
    const keysService = new ApiKeysService(credentials, events);
    keysService.onModuleInit();
    return keysService;
  }

  function clusterEvents(): ClusterEvents {
    return new ClusterEvents({ redis: {} } as AppConfig, { embedded: true } as DatabaseConnection, { error: () => undefined } as never);
  }

  beforeEach(() => {
    row.revokedAt = null;
    holdReads = false;
  });

  it('does not cache a key read before a revocation that evicted it during the read', async () => {
    const events = clusterEvents();
    const keys = service(events);
    holdReads = true;
    const inFlight = keys.authenticate('agk_secret');
    row.revokedAt = new Date();
    await events.publish({ type: 'apikey.revoked', orgId: row.orgId, keyId: row.id });
    releaseRead();
    await inFlight;
    holdReads = false;
    expect(await keys.authenticate('agk_secret')).toBeNull();
  });

  it('caches a key read with no revocation in between', async () => {
    const keys = service(clusterEvents());
    expect(await keys.authenticate('agk_secret')).toEqual({ orgId: 'org_1', credentialId: 'key_1' });
    row.revokedAt = new Date();
    expect(await keys.authenticate('agk_secret')).toEqual({ orgId: 'org_1', credentialId: 'key_1' });
  });
});
