import { Injectable, OnModuleInit } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { ClusterEvents } from '../changes/cluster-events';
import { hashAdminToken } from '../../core/edge-protocol/secret-hash';
import { CallerCredentials } from '../organizations/caller-credentials';
import { CredentialLookups } from '../organizations/credential-lookups';

/** Who calls the adapter endpoints: an organization, through an API key or its identity provider. */
export interface AdapterPrincipal {
  orgId: string;
  /** The API key's id, or the identity provider's subject (managed identity). */
  credentialId: string;
  /** A managed-identity token's expiry (ms since the epoch); API keys live until revoked. */
  expiresMs?: number;
}

const MAX_CACHED_KEYS = 10_000;

/**
 * Checks adapter API keys (issued by IssuedCredentialsService, stored in CallerCredentials) on
 * every adapter call. Known keys are cached; a revocation evicts them on every instance before
 * the API answers (ClusterEvents), so a revoked key fails its next call. A load that overlaps an
 * eviction is not cached: it may have read the row before the revocation. Unknown and revoked
 * keys are refused from memory for a while (CredentialLookups); a new key needs no forgetting of
 * them, being 256 random bits no one can have presented before.
 */
@Injectable()
export class ApiKeysService implements OnModuleInit {
  private readonly known = new LRUCache<string, AdapterPrincipal>({ max: MAX_CACHED_KEYS });
  private readonly lookups = new CredentialLookups<AdapterPrincipal>();
  private evictions = 0;

  constructor(
    private readonly credentials: CallerCredentials,
    private readonly events: ClusterEvents,
  ) {}

  onModuleInit(): void {
    this.events.subscribe((event) => {
      if (event.type === 'apikey.revoked') this.evict(event.keyId);
      else if (event.type === 'resync') this.clear();
    });
  }

  /** The principal a key stands for, or null when it is unknown or revoked. */
  authenticate(key: string): Promise<AdapterPrincipal | null> {
    return this.authenticateHash(hashAdminToken(key));
  }

  /** As `authenticate`, by the key's hash: a stream checks its key on every message without hashing it again. */
  async authenticateHash(hash: string): Promise<AdapterPrincipal | null> {
    const cached = this.known.get(hash);
    return cached !== undefined ? cached : this.lookups.lookup(hash, () => this.load(hash));
  }

  private async load(hash: string): Promise<AdapterPrincipal | null> {
    const evictionsAtStart = this.evictions;
    const row = await this.credentials.findActive('api_key', hash);
    if (row === null) return null;
    const principal = { orgId: row.orgId, credentialId: row.id };
    if (this.evictions === evictionsAtStart) {
      this.known.set(hash, principal);
    }
    return principal;
  }

  private evict(keyId: string): void {
    this.evictions++;
    this.lookups.forgetLookupsUnderWay();
    const revoked = [...this.known.entries()].filter(([, principal]) => principal.credentialId === keyId);
    for (const [hash] of revoked) this.known.delete(hash);
  }

  private clear(): void {
    this.evictions++;
    this.known.clear();
    this.lookups.forgetRefused();
  }
}
