import { randomBytes } from 'node:crypto';
import pino from 'pino';
import type { Repository } from 'typeorm';
import { AppConfig } from '../../core/config/app-config';
import type { ClusterEvent } from '../changes/cluster-event';
import type { ClusterEvents } from '../changes/cluster-events';
import { boundTo, sealValue } from './credential-cipher';
import { StoredCredentials } from './stored-credentials';
import type { UpstreamCredential } from './upstream-credential.entity';

/**
 * The order of loads (docs/security.md "Upstream credentials"): a reload of every row begun
 * before a rotation committed must not land after the rotation's own reload and put the old
 * value back in force. The table is a stand-in whose reads are held until the test lets them
 * answer, so the interleaving that races on a busy machine is played out exactly.
 */

const KEY_TEXT = randomBytes(32).toString('base64');
const config = AppConfig.fromEnv({ CREDENTIALS_KEY: KEY_TEXT });
const key = config.credentialKeys.current!;

function row(value: string, version: number): UpstreamCredential {
  return {
    id: 'cred_1',
    orgId: 'org_a',
    routeKind: 'proxy',
    route: '/proxy/payments',
    placement: 'header',
    placementName: 'X-Api-Key',
    sealed: sealValue(key, value, boundTo('cred_1', 'org_a')),
    keyId: key.id,
    forEdge: false,
    version,
    revokedAt: null,
  } as UpstreamCredential;
}

/** A table whose `find` (all rows) answers only when released, with the rows as they were when it was called. */
class HeldTable {
  current: UpstreamCredential = row('old-secret', 1);
  private held: Array<() => void> = [];
  holdFinds = false;

  find = (): Promise<UpstreamCredential[]> => {
    const snapshot = [this.current];
    if (!this.holdFinds) return Promise.resolve(snapshot);
    return new Promise((resolve) => this.held.push(() => resolve(snapshot)));
  };

  findOne = (): Promise<UpstreamCredential> => Promise.resolve(this.current);

  release(): void {
    for (const answer of this.held.splice(0)) answer();
  }
}

class Events {
  handler: ((event: ClusterEvent) => void) | undefined;
  subscribe(handler: (event: ClusterEvent) => void): () => void {
    this.handler = handler;
    return () => undefined;
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

it('a reload of every row begun before a rotation committed does not put the old value back', async () => {
  const table = new HeldTable();
  const events = new Events();
  const stored = new StoredCredentials(config, table as unknown as Repository<UpstreamCredential>, events as unknown as ClusterEvents, pino({ level: 'silent' }));
  await stored.onModuleInit();
  expect(stored.forProxy('org_a', '/proxy/payments/x')?.value).toBe('old-secret');

  table.holdFinds = true;
  events.handler!({ type: 'resync' });
  await settle();
  table.current = row('new-secret', 2);
  events.handler!({ type: 'credential.changed', orgId: 'org_a', credentialId: 'cred_1' });
  await settle();
  table.release();
  for (let turn = 0; turn < 5; turn++) await settle();

  expect(stored.forProxy('org_a', '/proxy/payments/x')?.value).toBe('new-secret');
});
