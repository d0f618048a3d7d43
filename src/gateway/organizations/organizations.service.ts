import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, Repository } from 'typeorm';
import { Logger } from 'pino';
import { ClusterEvents } from '../changes/cluster-events';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { newId } from '../../core/common/ids';
import { LOGGER } from '../../core/logging/logging.module';
import { hashAdminToken } from '../../core/edge-protocol/secret-hash';
import { CallerCredential } from './caller-credential.entity';
import { CallerCredentials } from './caller-credentials';
import { CredentialLookups } from './credential-lookups';
import { Organization } from './organization.entity';
import { PLANS, PlanId, PlanLimits, UNLIMITED } from '../../core/config/plans';

export const BOOTSTRAP_ORG_ID = 'org_default';

/** What a plan limits by count. */
export type LimitedResource = 'agents' | 'policies' | 'teamMembers';

const LIMIT_NOUNS: Record<LimitedResource, [one: string, many: string]> = { agents: ['agent', 'agents'], policies: ['policy', 'policies'], teamMembers: ['team member', 'team members'] };

function limitNoun(resource: LimitedResource, limit: number): string {
  return LIMIT_NOUNS[resource][limit === 1 ? 0 : 1];
}

export interface CreatedOrganization {
  organization: Organization;
  /** Shown once; only its hash is stored. */
  adminToken: string;
}

/**
 * Organizations and their admin tokens. Unknown and revoked admin tokens are refused from memory
 * for a while (CredentialLookups); adopting ADMIN_TOKEN or rotating a token makes every instance
 * forget those refusals (see `bootstrap` and `rotateAdminToken`).
 */
@Injectable()
export class OrganizationsService implements OnModuleInit {
  private readonly tokenLookups = new CredentialLookups<AdminPrincipal>();

  constructor(
    @InjectRepository(Organization) private readonly organizations: Repository<Organization>,
    private readonly credentials: CallerCredentials,
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly events: ClusterEvents,
  ) {}

  onModuleInit(): void {
    this.events.subscribe((event) => {
      if (event.type === 'admintokens.changed' || event.type === 'resync') this.tokenLookups.forgetRefused();
    });
  }

  /**
   * Makes sure org_default exists and holds the configured admin token. Returns the token when
   * one was generated (the caller prints it once), else null.
   */
  async bootstrap(adminToken: string | undefined, defaultPlan: PlanId): Promise<string | null> {
    await this.ensureBootstrapOrganization(defaultPlan);
    const generated = await this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT id FROM organizations WHERE id = $1 FOR UPDATE', [BOOTSTRAP_ORG_ID]);
      const current = await this.credentials.list('admin_token', BOOTSTRAP_ORG_ID, manager, { activeOnly: true, bootstrap: true });
      if (adminToken !== undefined) {
        await this.adoptBootstrapToken(manager, hashAdminToken(adminToken), current);
        return null;
      }
      if (current.length > 0) return null;
      return this.issueToken(manager, BOOTSTRAP_ORG_ID, true);
    });
    // ADMIN_TOKEN is chosen by people, so it may have been tried, and refused, before it was set.
    await this.events.publish({ type: 'admintokens.changed' });
    return generated;
  }

  /** Creates org_default, on `defaultPlan`, if it does not exist yet (the plan is not changed later). */
  async ensureBootstrapOrganization(defaultPlan: PlanId): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO organizations (id, name, plan) VALUES ($1, 'Default organization', $2) ON CONFLICT (id) DO NOTHING`,
      [BOOTSTRAP_ORG_ID, defaultPlan],
    );
  }

  /**
   * Creates an organization with its first admin token; inside `manager`'s transaction when
   * given (billing creates one while it applies a webhook event).
   */
  async create(input: { name: string; billingEmail?: string; plan?: PlanId; customerId?: string }, manager?: EntityManager): Promise<CreatedOrganization> {
    if (manager === undefined) return this.dataSource.transaction((own) => this.create(input, own));
    const organization = manager.getRepository(Organization).create({
      id: newId('org'),
      name: input.name,
      plan: input.plan ?? 'free',
      billingEmail: input.billingEmail ?? null,
      customerId: input.customerId ?? null,
    });
    await manager.getRepository(Organization).insert(organization);
    const adminToken = await this.issueToken(manager, organization.id, false);
    return { organization, adminToken };
  }

  /**
   * Issues a new admin token for an organization. For org_default it replaces the bootstrap
   * token (the way to recover a generated token that was printed and lost).
   */
  async rotateAdminToken(orgId: string): Promise<string> {
    await this.get(orgId);
    const token = await this.dataSource.transaction(async (manager) => {
      const bootstrap = orgId === BOOTSTRAP_ORG_ID;
      await this.revokeAll(manager, await this.credentials.list('admin_token', orgId, manager, { activeOnly: true, bootstrap }));
      return this.issueToken(manager, orgId, bootstrap);
    });
    // Ends the lookups under way on every instance: they may have read the revoked token as active.
    await this.events.publish({ type: 'admintokens.changed' });
    return token;
  }

  /** The principal an admin token stands for, or null when it is unknown or revoked. */
  authenticate(token: string): Promise<AdminPrincipal | null> {
    const tokenHash = hashAdminToken(token);
    return this.tokenLookups.lookup(tokenHash, async () => {
      const found = await this.credentials.findActive('admin_token', tokenHash);
      return found ? { orgId: found.orgId, tokenId: found.id } : null;
    });
  }

  async find(orgId: string): Promise<Organization | null> {
    return this.organizations.findOne({ where: { id: orgId } });
  }

  async get(orgId: string): Promise<Organization> {
    const organization = await this.find(orgId);
    if (!organization) throw AppError.notFound('organization', orgId);
    return organization;
  }

  async list(): Promise<Organization[]> {
    return this.organizations.find({ order: { createdAt: 'ASC' } });
  }

  /** Active agents and policies of an organization. */
  async counts(orgId: string): Promise<{ agents: number; policies: number }> {
    const rows: Array<{ agents: string; policies: string }> = await this.dataSource.query(
      `SELECT (SELECT count(*) FROM agents WHERE org_id = $1 AND revoked_at IS NULL) AS agents,
              (SELECT count(*) FROM policies WHERE org_id = $1) AS policies`,
      [orgId],
    );
    return { agents: Number(rows[0].agents), policies: Number(rows[0].policies) };
  }

  /** The plan limits in force for an organization. */
  async limitsOf(orgId: string): Promise<{ plan: PlanId; limits: PlanLimits }> {
    const organization = await this.get(orgId);
    return { plan: organization.plan, limits: PLANS[organization.plan].limits };
  }

  /**
   * Throws plan_limit_exceeded when adding one more `resource` would pass the plan's limit.
   * Call inside the transaction that adds it: the organization row stays locked until it ends,
   * so concurrent creates are counted one after another.
   */
  async assertCanAdd(manager: EntityManager, orgId: string, resource: LimitedResource, countCurrent: () => Promise<number>): Promise<void> {
    const rows: Array<{ plan: PlanId }> = await manager.query('SELECT plan FROM organizations WHERE id = $1 FOR UPDATE', [orgId]);
    if (rows.length === 0) throw AppError.notFound('organization', orgId);
    const plan = rows[0].plan;
    const limit = PLANS[plan].limits[resource];
    if (limit === UNLIMITED) return;
    if ((await countCurrent()) < limit) return;
    throw new AppError(ErrorCode.PlanLimitExceeded, `The ${plan} plan allows ${limit} ${limitNoun(resource, limit)}`, { limit, plan });
  }

  /**
   * Credentials that count against `teamMembers`: the active admin tokens and API keys people and
   * adapters hold. Whatever issues one checks with
   * `assertCanAdd(manager, orgId, 'teamMembers', () => countTeamCredentials(manager, orgId))`.
   */
  countTeamCredentials(manager: EntityManager, orgId: string): Promise<number> {
    return this.credentials.countActive(manager, orgId, ['admin_token', 'api_key']);
  }

  /**
   * Makes the configured ADMIN_TOKEN org_default's only bootstrap token: a token used before
   * (e.g. after a rollback of the setting) is reactivated rather than inserted twice.
   */
  private async adoptBootstrapToken(manager: EntityManager, hash: string, current: CallerCredential[]): Promise<void> {
    if (current.length === 1 && current[0].secretHash === hash) return;
    const known = await this.credentials.findByHash(manager, 'admin_token', hash);
    if (known !== null && known.orgId !== BOOTSTRAP_ORG_ID) throw new Error(`ADMIN_TOKEN is already an admin token of organization ${known.orgId}`);
    await this.revokeAll(manager, current.filter((token) => token.secretHash !== hash));
    if (known === null) {
      await this.credentials.insert(manager, 'admin_token', BOOTSTRAP_ORG_ID, hash, { bootstrap: true });
      this.logTokenIssued(BOOTSTRAP_ORG_ID, true);
    } else if (known.revokedAt !== null || !known.bootstrap) await this.credentials.reactivateBootstrap(manager, known.id);
  }

  /** A new admin token: `bootstrap` for org_default's (replaced by the next rotation or ADMIN_TOKEN), else issued by the CLI or billing. */
  private async issueToken(manager: EntityManager, orgId: string, bootstrap: boolean): Promise<string> {
    const { secret } = await this.credentials.issue(manager, 'admin_token', orgId, { bootstrap });
    this.logTokenIssued(orgId, bootstrap);
    return secret;
  }

  private logTokenIssued(orgId: string, bootstrap: boolean): void {
    this.logger.info({ orgId, kind: bootstrap ? 'bootstrap' : 'issued' }, 'admin token issued');
  }

  private async revokeAll(manager: EntityManager, tokens: CallerCredential[]): Promise<void> {
    const revokedAt = new Date();
    for (const token of tokens) await this.credentials.revoke(manager, 'admin_token', token.orgId, token.id, revokedAt);
  }
}
