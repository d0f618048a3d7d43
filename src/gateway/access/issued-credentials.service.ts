import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { ClusterEvents } from '../changes/cluster-events';
import { PolicyChangeLog } from '../changes/policy-change-log';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { CallerCredential } from '../organizations/caller-credential.entity';
import { CallerCredentials } from '../organizations/caller-credentials';
import { OrganizationsService } from '../organizations/organizations.service';

/** The credentials admins issue over the admin API (admin tokens come from the CLI, billing and ADMIN_TOKEN). */
export type IssuedKind = 'api_key' | 'sidecar_token';

interface IssuedKindRules {
  /** Named in a 404. */
  noun: string;
  /** Audit actions are `<auditName>.create` and `<auditName>.revoke`. */
  auditName: string;
  defaultName: string;
  /**
   * API keys: counted against the plan's teamMembers, and revoked in the policy history (an SDK's
   * cached decisions may rest on the key) and in every instance's key cache at once. Sidecar
   * tokens are looked up on every call and count against no limit.
   */
  adapterKey: boolean;
}

const RULES: Record<IssuedKind, IssuedKindRules> = {
  api_key: { noun: 'API key', auditName: 'apikey', defaultName: 'adapter', adapterKey: true },
  sidecar_token: { noun: 'sidecar token', auditName: 'sidecartoken', defaultName: 'sidecar', adapterKey: false },
};

/** A credential just issued: the only time its secret is shown. */
export interface NewCredential {
  id: string;
  secret: string;
  name: string;
  createdAt: string;
}

/** A credential as lists show it (never the secret). */
export interface IssuedCredentialView {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
}

/**
 * Issuing, listing and revoking API keys and sidecar tokens, one code for both kinds (their
 * controllers only name the secret's field). Every change is an admin audit entry naming the
 * credential's id and name, never its secret.
 */
@Injectable()
export class IssuedCredentialsService {
  constructor(
    private readonly credentials: CallerCredentials,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly organizations: OrganizationsService,
    private readonly audit: AuditService,
    private readonly events: ClusterEvents,
    private readonly changeLog: PolicyChangeLog,
  ) {}

  async create(kind: IssuedKind, admin: AdminPrincipal, name: string | undefined): Promise<NewCredential> {
    const rules = RULES[kind];
    const { credential, secret } = await this.dataSource.transaction(async (manager) => {
      if (rules.adapterKey) await this.organizations.assertCanAdd(manager, admin.orgId, 'teamMembers', () => this.organizations.countTeamCredentials(manager, admin.orgId));
      return this.credentials.issue(manager, kind, admin.orgId, { name: name ?? rules.defaultName });
    });
    this.audit.recordAdminEvent(admin, { action: `${rules.auditName}.create`, details: { id: credential.id, name: credential.name } });
    return { id: credential.id, secret, name: credential.name ?? rules.defaultName, createdAt: credential.createdAt.toISOString() };
  }

  async list(kind: IssuedKind, admin: AdminPrincipal): Promise<IssuedCredentialView[]> {
    return (await this.credentials.list(kind, admin.orgId)).map(toView);
  }

  /** Revokes at once on every instance; revoking a revoked credential changes nothing. */
  async revoke(kind: IssuedKind, admin: AdminPrincipal, id: string): Promise<IssuedCredentialView> {
    const rules = RULES[kind];
    const row = await this.credentials.find(kind, admin.orgId, id);
    if (row === null) throw AppError.notFound(rules.noun, id);
    if (row.revokedAt !== null) return toView(row);
    // Only while still active: of two revocations at once, one writes and records it; the other
    // answers what that one stored.
    const revokedAt = new Date();
    const revoked = await this.dataSource.transaction(async (manager) => {
      if (!(await this.credentials.revoke(manager, kind, admin.orgId, id, revokedAt))) return null;
      return { version: rules.adapterKey ? await this.changeLog.recordIn(manager, admin.orgId, 'apikey_revoked', id, admin.tokenId) : null };
    });
    if (revoked === null) return toView((await this.credentials.find(kind, admin.orgId, id)) ?? row);
    if (revoked.version !== null) {
      await this.events.publish({ type: 'apikey.revoked', orgId: admin.orgId, keyId: id });
      await this.changeLog.announce(admin.orgId, revoked.version, 'apikey_revoked', id);
    }
    this.audit.recordAdminEvent(admin, { action: `${rules.auditName}.revoke`, details: { id, name: row.name } });
    return toView({ ...row, revokedAt });
  }
}

function toView(row: CallerCredential): IssuedCredentialView {
  return { id: row.id, name: row.name ?? '', prefix: row.secretPrefix ?? '', createdAt: row.createdAt.toISOString(), revokedAt: row.revokedAt?.toISOString() ?? null };
}
