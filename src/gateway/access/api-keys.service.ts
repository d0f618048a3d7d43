import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, IsNull, Repository } from 'typeorm';
import { LRUCache } from 'lru-cache';
import { AuditService } from '../audit/audit.service';
import { ClusterEvents } from '../changes/cluster-events';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { newId, newSecret } from '../../core/common/ids';
import { hashAdminToken } from '../../core/edge-protocol/secret-hash';
import { CredentialLookups } from '../organizations/credential-lookups';
import { OrganizationsService } from '../organizations/organizations.service';
import { PolicyChangeLog } from '../changes/policy-change-log';
import { ApiKey } from './api-key.entity';
import { ApiKeyView, CreateApiKeyDto, CreatedApiKeyView } from './api-keys.dto';

/** Who calls the adapter endpoints: an organization, through an API key or its identity provider. */
export interface AdapterPrincipal {
  orgId: string;
  /** The API key's id, or the identity provider's subject (managed identity). */
  credentialId: string;
  /** A managed-identity token's expiry (ms since the epoch); API keys live until revoked. */
  expiresMs?: number;
}

const MAX_CACHED_KEYS = 10_000;
const PREFIX_CHARS = 8;

/**
 * Adapter API keys: issued once, stored hashed (SHA-256: the key carries 256 random bits, and
 * lookup by hash compares no secret byte by byte), counted against the plan's teamMembers with
 * the organization's admin tokens. Known keys are cached; a revocation evicts them on every
 * instance before the API answers (ClusterEvents), so a revoked key fails its next call. A load
 * that overlaps an eviction is not cached: it may have read the row before the revocation.
 * Unknown and revoked keys are refused from memory for a while (CredentialLookups); a new key
 * needs no forgetting of them, being 256 random bits no one can have presented before.
 */
@Injectable()
export class ApiKeysService implements OnModuleInit {
  private readonly known = new LRUCache<string, AdapterPrincipal>({ max: MAX_CACHED_KEYS });
  private readonly lookups = new CredentialLookups<AdapterPrincipal>();
  private evictions = 0;

  constructor(
    @InjectRepository(ApiKey) private readonly keys: Repository<ApiKey>,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly organizations: OrganizationsService,
    private readonly audit: AuditService,
    private readonly events: ClusterEvents,
    private readonly changeLog: PolicyChangeLog,
  ) {}

  onModuleInit(): void {
    this.events.subscribe((event) => {
      if (event.type === 'apikey.revoked') this.evict(event.keyId);
      else if (event.type === 'resync') this.clear();
    });
  }

  async create(admin: AdminPrincipal, dto: CreateApiKeyDto): Promise<CreatedApiKeyView> {
    const key = newSecret('agk');
    const row = await this.dataSource.transaction(async (manager) => {
      await this.organizations.assertCanAdd(manager, admin.orgId, 'teamMembers', () => this.credentialCount(manager, admin.orgId));
      const created = manager.getRepository(ApiKey).create({
        id: newId('key'),
        orgId: admin.orgId,
        name: dto.name ?? 'adapter',
        keyHash: hashAdminToken(key),
        keyPrefix: key.slice(0, PREFIX_CHARS),
        revokedAt: null,
      });
      return manager.getRepository(ApiKey).save(created);
    });
    this.audit.recordAdminEvent(admin, { action: 'apikey.create', details: { id: row.id, name: row.name } });
    return { id: row.id, key, name: row.name, createdAt: row.createdAt.toISOString() };
  }

  async list(admin: AdminPrincipal): Promise<ApiKeyView[]> {
    const rows = await this.keys.find({ where: { orgId: admin.orgId }, order: { createdAt: 'ASC' } });
    return rows.map(toView);
  }

  /** Revokes at once on every instance; revoking a revoked key changes nothing. */
  async revoke(admin: AdminPrincipal, id: string): Promise<ApiKeyView> {
    const row = await this.keys.findOne({ where: { id, orgId: admin.orgId } });
    if (row === null) throw AppError.notFound('API key', id);
    if (row.revokedAt !== null) return toView(row);
    // Only while still active: of two revocations at once, one writes and records it; the other
    // answers what that one stored.
    const revokedAt = new Date();
    const version = await this.dataSource.transaction(async (manager) => {
      const { affected } = await manager.getRepository(ApiKey).update({ id, revokedAt: IsNull() }, { revokedAt });
      return affected ? this.changeLog.recordIn(manager, admin.orgId, 'apikey_revoked', id, admin.tokenId) : null;
    });
    if (version === null) return toView(await this.keys.findOneOrFail({ where: { id } }));
    await this.events.publish({ type: 'apikey.revoked', orgId: admin.orgId, keyId: id });
    await this.changeLog.announce(admin.orgId, version, 'apikey_revoked', id);
    this.audit.recordAdminEvent(admin, { action: 'apikey.revoke', details: { id, name: row.name } });
    return toView({ ...row, revokedAt });
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
    const row = await this.keys.findOne({ where: { keyHash: hash, revokedAt: IsNull() } });
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

  /** Active credentials people and adapters hold: admin tokens and API keys. */
  private async credentialCount(manager: DataSource['manager'], orgId: string): Promise<number> {
    const keys = await manager.getRepository(ApiKey).count({ where: { orgId, revokedAt: IsNull() } });
    return keys + (await this.organizations.countTeamCredentials(manager, orgId));
  }
}

function toView(row: ApiKey): ApiKeyView {
  return { id: row.id, name: row.name, prefix: row.keyPrefix, createdAt: row.createdAt.toISOString(), revokedAt: row.revokedAt?.toISOString() ?? null };
}
