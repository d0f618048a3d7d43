import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, IsNull, Repository } from 'typeorm';
import { newId, newSecret } from '../../core/common/ids';
import { hashAdminToken } from '../../core/edge-protocol/secret-hash';
import { CallerCredential, CallerCredentialKind } from './caller-credential.entity';

/** How each kind's secrets and ids begin: a sidecar token's `sct_` lets the auth guard tell it from an admin token unseen. */
const SECRET_PREFIX: Record<CallerCredentialKind, string> = { api_key: 'agk', sidecar_token: 'sct', admin_token: 'adm' };
const ID_PREFIX: Record<CallerCredentialKind, string> = { api_key: 'key', sidecar_token: 'sctk', admin_token: 'atk' };
/** Characters of a named credential's secret kept to tell it apart in a list: its prefix and four random characters. */
const LISTED_PREFIX_CHARS = 8;

export interface IssuedSecret {
  credential: CallerCredential;
  /** Shown once; only its hash is stored. */
  secret: string;
}

/**
 * The one store of the secrets callers present (API keys, sidecar tokens, admin tokens), each a
 * row of `caller_credentials` with its kind: secrets of 256 random bits, stored as SHA-256 and
 * looked up by hash, so no secret is compared byte by byte. What each kind's callers may do, and
 * what is cached of them, is up to its users (the auth guard, ApiKeysService, OrganizationsService).
 * Every query names the kind: a secret of one kind never opens another's routes.
 */
@Injectable()
export class CallerCredentials {
  constructor(@InjectRepository(CallerCredential) private readonly credentials: Repository<CallerCredential>) {}

  /** A new secret of `kind`; `name` (API keys and sidecar tokens) is shown in lists with the secret's first characters. */
  async issue(manager: EntityManager, kind: CallerCredentialKind, orgId: string, details: { name?: string; bootstrap?: boolean } = {}): Promise<IssuedSecret> {
    const secret = newSecret(SECRET_PREFIX[kind]);
    const prefix = details.name === undefined ? null : secret.slice(0, LISTED_PREFIX_CHARS);
    const credential = await this.insert(manager, kind, orgId, hashAdminToken(secret), { ...details, prefix });
    return { credential, secret };
  }

  /** Stores a secret chosen elsewhere by its hash (ADMIN_TOKEN, set by people). */
  async insert(manager: EntityManager, kind: CallerCredentialKind, orgId: string, secretHash: string, details: { name?: string; prefix?: string | null; bootstrap?: boolean } = {}): Promise<CallerCredential> {
    const credential = manager.getRepository(CallerCredential).create({
      id: newId(ID_PREFIX[kind]),
      kind,
      orgId,
      name: details.name ?? null,
      secretHash,
      secretPrefix: details.prefix ?? null,
      bootstrap: details.bootstrap ?? false,
      sidecarKeys: null,
      sidecarId: null,
      boundAt: null,
      revokedAt: null,
    });
    await manager.getRepository(CallerCredential).insert(credential);
    return credential;
  }

  /** The live credential of `kind` whose secret hashes to `secretHash`, or null. */
  findActive(kind: CallerCredentialKind, secretHash: string): Promise<CallerCredential | null> {
    return this.credentials.findOne({ where: { kind, secretHash, revokedAt: IsNull() } });
  }

  /** The credential of `kind` whose secret hashes to `secretHash`, revoked or not, or null. */
  findByHash(manager: EntityManager, kind: CallerCredentialKind, secretHash: string): Promise<CallerCredential | null> {
    return manager.getRepository(CallerCredential).findOne({ where: { kind, secretHash } });
  }

  find(kind: CallerCredentialKind, orgId: string, id: string): Promise<CallerCredential | null> {
    return this.credentials.findOne({ where: { kind, orgId, id } });
  }

  findActiveById(kind: CallerCredentialKind, orgId: string, id: string): Promise<CallerCredential | null> {
    return this.credentials.findOne({ where: { kind, orgId, id, revokedAt: IsNull() } });
  }

  /** An organization's credentials of `kind`, oldest first; with `bootstrap`, only admin tokens that are (or are not) the bootstrap token. */
  list(kind: CallerCredentialKind, orgId: string, manager: EntityManager = this.credentials.manager, filter: { activeOnly?: boolean; bootstrap?: boolean } = {}): Promise<CallerCredential[]> {
    return manager.getRepository(CallerCredential).find({
      where: { kind, orgId, ...(filter.activeOnly ? { revokedAt: IsNull() } : {}), ...(filter.bootstrap === undefined ? {} : { bootstrap: filter.bootstrap }) },
      order: { createdAt: 'ASC' },
    });
  }

  /** Revokes a live credential; false when it was revoked already (of two revocations at once, one writes). */
  async revoke(manager: EntityManager, kind: CallerCredentialKind, orgId: string, id: string, revokedAt: Date): Promise<boolean> {
    const { affected } = await manager.getRepository(CallerCredential).update({ kind, orgId, id, revokedAt: IsNull() }, { revokedAt });
    return Boolean(affected);
  }

  /** Makes a revoked admin token org_default's bootstrap token again (ADMIN_TOKEN set back to it). */
  async reactivateBootstrap(manager: EntityManager, id: string): Promise<void> {
    await manager.getRepository(CallerCredential).update({ kind: 'admin_token', id }, { revokedAt: null, bootstrap: true });
  }

  /** Live credentials of these kinds an organization holds (what counts against the plan's teamMembers). */
  countActive(manager: EntityManager, orgId: string, kinds: CallerCredentialKind[]): Promise<number> {
    return manager.getRepository(CallerCredential).count({ where: { orgId, kind: In(kinds), revokedAt: IsNull() } });
  }

  /** Binds an unbound sidecar token to sidecar keys; false when it was bound meanwhile. */
  async bindSidecarKeys(id: string, sidecarKeys: string, sidecarId: string): Promise<boolean> {
    const { affected } = await this.credentials.update({ kind: 'sidecar_token', id, sidecarKeys: IsNull() }, { sidecarKeys, sidecarId, boundAt: new Date() });
    return Boolean(affected);
  }
}
