import { lockNextVersion, versionOf } from '../changes/policy-versions';
import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, Repository } from 'typeorm';
import { stringify } from 'yaml';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { AuditService } from '../audit/audit.service';
import type { PolicyChangeKind } from '../changes/cluster-event';
import { PolicyLoadError } from '../../core/policy-engine/errors';
import { loadPolicyDocument, loadPolicyFileOrDocument } from '../../core/policy-engine/loader';
import type { PolicyDefinition } from '../../core/policy-engine/types';
import { OrganizationsService } from '../organizations/organizations.service';
import { PolicyChangeEvents } from '../changes/policy-change-events';
import { Policy, PolicyOrigin } from './policy.entity';
import { PolicyVersion } from '../changes/policy-version.entity';
import { listedErrors, parseOrThrow } from './policy-errors';
import { forcedDetails, PolicyTestsService, testsFailed } from './policy-tests.service';
import { PolicyDetailView, PolicyListView, PolicyTestFailureView, PolicyVersionListView, PolicyView, ValidationResultView } from './policies.dto';

/** Who changes policies: an admin token, the CLI, or the policies file. */
export type PolicyActor = AdminPrincipal | { orgId: string; tokenId: 'cli' | 'file' | 'gateway' | `git:${string}` };

/** A canary rollout's new version, put in force by its promotion. */
export interface PromotedCanary {
  name: string;
  source: string;
  definition: PolicyDefinition;
  /** Ends the rollout in the promotion's transaction. */
  end: (manager: EntityManager, version: number) => Promise<void>;
}

interface Change {
  name: string;
  kind: Extract<PolicyChangeKind, 'created' | 'updated' | 'deleted'>;
  source: string | null;
}

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** GET /admin/policies/versions is the change history (routes match in any case): a policy so named could never be read. */
const RESERVED_NAME = /^versions$/i;

/** Policies of an organization: stored with their source, versioned on every change. */
@Injectable()
export class PoliciesService {
  constructor(
    @InjectRepository(Policy) private readonly policies: Repository<Policy>,
    @InjectRepository(PolicyVersion) private readonly versions: Repository<PolicyVersion>,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly organizations: OrganizationsService,
    private readonly changes: PolicyChangeEvents,
    private readonly audit: AuditService,
    private readonly tests: PolicyTestsService,
  ) {}

  /** The policies and the version they make up, read in one snapshot. */
  async list(principal: AdminPrincipal): Promise<PolicyListView> {
    return this.dataSource.transaction('REPEATABLE READ', async (manager) => {
      const policies = await manager.getRepository(Policy).find({ where: { orgId: principal.orgId }, order: { position: 'ASC' } });
      return { version: await versionOf(manager, principal.orgId), policies: policies.map(toView) };
    });
  }

  async get(principal: AdminPrincipal, name: string): Promise<PolicyDetailView> {
    const policy = await this.policies.findOne({ where: { orgId: principal.orgId, name } });
    if (policy === null) throw AppError.notFound('policy', name);
    return { ...toView(policy), source: policy.source };
  }

  /** Creates or replaces one policy from its YAML or JSON source; `created` tells which. */
  async put(actor: PolicyActor, name: string, source: string, force = false): Promise<{ created: boolean; policy: PolicyDetailView }> {
    if (!NAME_PATTERN.test(name)) throw AppError.invalid('policy name must be 1-128 characters of letters, digits, . _ - (starting with a letter or digit)');
    if (RESERVED_NAME.test(name)) throw AppError.invalid(`policy name ${name} is reserved: GET /admin/policies/versions is the change history`);
    const definition = parseOrThrow(() => loadPolicyDocument(source, `policy ${name}`));
    if (definition.name !== name) throw AppError.invalid(`name in the body (${definition.name}) does not match the name in the URL (${name})`);
    let created = false;
    await this.commit(actor, async (manager, version) => {
      const existing = await manager.getRepository(Policy).findOne({ where: { orgId: actor.orgId, name } });
      refuseGitOwned(existing);
      await refuseRolledOut(manager, actor.orgId, name);
      if (existing === null) {
        await this.organizations.assertCanAdd(manager, actor.orgId, 'policies', () => manager.getRepository(Policy).count({ where: { orgId: actor.orgId } }));
        created = true;
      }
      // The same text again is no change: a new version would invalidate every decision cache.
      if (existing?.origin === 'api' && existing.source === source) return [];
      await this.write(manager, actor.orgId, definition, source, 'api', version, existing);
      return [{ name, kind: created ? 'created' : 'updated', source }];
    }, force);
    return { created, policy: await this.get(actor as AdminPrincipal, name) };
  }

  /**
   * Puts a shadow policy in force (`ags policy promote`): its definition without `mode`, its
   * source written out again as YAML, a new version; refused like any change when stored tests
   * fail, unless forced.
   */
  async promote(actor: PolicyActor, name: string, force = false): Promise<PolicyDetailView> {
    await this.commit(actor, async (manager, version) => {
      const existing = await manager.getRepository(Policy).findOne({ where: { orgId: actor.orgId, name } });
      if (existing === null) throw AppError.notFound('policy', name);
      refuseGitOwned(existing);
      await refuseRolledOut(manager, actor.orgId, name);
      if (existing.definition.mode !== 'shadow') throw new AppError(ErrorCode.Conflict, `policy ${name} is already in force: only a shadow policy is promoted`);
      const { mode: _shadow, ...definition } = existing.definition;
      const source = stringify(definition);
      await this.write(manager, actor.orgId, definition, source, existing.origin, version, existing);
      return [{ name, kind: 'updated', source }];
    }, force);
    return this.get(actor as AdminPrincipal, name);
  }

  /**
   * Puts a canary rollout's new version in force (docs/policies.md "Canary rollouts"), ending the
   * rollout in the same transaction: one new version, refused like any change when stored tests
   * fail, unless forced. The version in force when the rollout started is replaced; a new policy
   * is created.
   */
  async promoteCanary(actor: PolicyActor, canary: PromotedCanary, force = false): Promise<number> {
    const version = await this.commit(actor, async (manager, next) => {
      const existing = await manager.getRepository(Policy).findOne({ where: { orgId: actor.orgId, name: canary.name } });
      refuseGitOwned(existing);
      if (existing === null) await this.organizations.assertCanAdd(manager, actor.orgId, 'policies', () => manager.getRepository(Policy).count({ where: { orgId: actor.orgId } }));
      await canary.end(manager, next);
      await this.write(manager, actor.orgId, canary.definition, canary.source, 'api', next, existing);
      return [{ name: canary.name, kind: existing === null ? 'created' : 'updated', source: canary.source }];
    }, force);
    return version!;
  }

  async remove(actor: PolicyActor, name: string, force = false): Promise<{ version: number }> {
    const version = await this.commit(actor, async (manager) => {
      refuseGitOwned(await manager.getRepository(Policy).findOne({ where: { orgId: actor.orgId, name } }));
      await refuseRolledOut(manager, actor.orgId, name);
      const result = await manager.getRepository(Policy).delete({ orgId: actor.orgId, name });
      if (!result.affected) throw AppError.notFound('policy', name);
      return [{ name, kind: 'deleted', source: null }];
    }, force);
    return { version: version! };
  }

  /**
   * Makes the organization's file-origin policies equal to `definitions`: new ones created,
   * changed ones updated, ones no longer in the file deleted, all under one version. Policies
   * made through the API keep living beside them, unless the file names them (the file wins).
   * Returns the new version, or null when nothing changed.
   */
  async syncFromFile(orgId: string, definitions: PolicyDefinition[]): Promise<number | null> {
    return this.syncOrigin({ orgId, tokenId: 'file' }, 'file', definitions);
  }

  /**
   * Makes the organization's git-origin policies equal to a commit's (docs/policies.md "Policies
   * from git"), as syncFromFile does for the file: one version, its history's actor naming the
   * commit (`git:<sha>`). Null when the commit changes no policy.
   */
  async syncFromGit(orgId: string, definitions: PolicyDefinition[], commit: string): Promise<number | null> {
    return this.syncOrigin({ orgId, tokenId: `git:${commit}` }, 'git', definitions);
  }

  private async syncOrigin(actor: { orgId: string; tokenId: 'file' | `git:${string}` }, origin: Exclude<PolicyOrigin, 'api'>, definitions: PolicyDefinition[]): Promise<number | null> {
    const orgId = actor.orgId;
    return this.commit(actor, async (manager, version) => {
      const repository = manager.getRepository(Policy);
      const current = new Map((await repository.find({ where: { orgId } })).map((policy) => [policy.name, policy]));
      const changes: Change[] = [];
      for (const definition of definitions) {
        const existing = current.get(definition.name) ?? null;
        const source = stringify(definition);
        if (existing?.origin === origin && existing.source === source) continue;
        await this.write(manager, orgId, definition, source, origin, version, existing);
        changes.push({ name: definition.name, kind: existing ? 'updated' : 'created', source });
      }
      const kept = new Set(definitions.map((definition) => definition.name));
      for (const policy of current.values()) {
        if (policy.origin !== origin || kept.has(policy.name)) continue;
        await repository.delete({ orgId, name: policy.name });
        changes.push({ name: policy.name, kind: 'deleted', source: null });
      }
      return changes;
    });
  }

  /** Checks a policies file or a single policy without storing anything. */
  validate(source: string): ValidationResultView {
    try {
      const definitions = parseProposedSource(source);
      return { valid: true, policies: definitions.map((definition) => definition.name), errors: [], errorCount: 0 };
    } catch (error) {
      if (!(error instanceof PolicyLoadError)) throw error;
      return { valid: false, policies: [], ...listedErrors(error.errors) };
    }
  }

  /** The change history, newest first, with the current version, read in one snapshot. */
  async history(principal: AdminPrincipal, limit = 100): Promise<PolicyVersionListView> {
    return this.dataSource.transaction('REPEATABLE READ', async (manager) => {
      const rows = await manager.getRepository(PolicyVersion).find({ where: { orgId: principal.orgId }, order: { version: 'DESC', policyName: 'ASC' }, take: limit });
      return {
        version: await versionOf(manager, principal.orgId),
        versions: rows.map((row) => ({
          version: row.version,
          policy: row.policyName,
          kind: row.kind,
          actor: row.actor,
          createdAt: row.createdAt.toISOString(),
          source: row.source,
        })),
      };
    });
  }

  async currentVersion(orgId: string): Promise<number> {
    return versionOf(this.dataSource.manager, orgId);
  }

  /**
   * Runs `apply` in a transaction holding the organization's row lock, under the next policy
   * version; records the history, then announces the change and writes it to the audit trail.
   * A change through the API (`force` given) must pass the organization's stored tests on what
   * it puts in force, checked in the same transaction, or be forced (audited with the failures).
   */
  private async commit(actor: PolicyActor, apply: (manager: EntityManager, version: number) => Promise<Change[]>, force?: boolean): Promise<number | null> {
    const orgId = actor.orgId;
    let failures: PolicyTestFailureView[] = [];
    const committed = await this.dataSource.transaction(async (manager) => {
      const version = await lockNextVersion(manager, orgId);
      const changes = await apply(manager, version);
      if (force !== undefined && changes.length > 0) {
        const inForce = await manager.getRepository(Policy).find({ where: { orgId }, order: { position: 'ASC' } });
        failures = await this.tests.failuresWith(manager, orgId, inForce.map((policy) => policy.definition));
        if (failures.length > 0 && !force) throw testsFailed(failures, 'The change fails stored policy tests');
      }
      if (changes.length > 0) {
        await manager.getRepository(PolicyVersion).insert(
          changes.map((change) => ({ orgId, version, policyName: change.name, kind: change.kind, source: change.source, actor: actor.tokenId })),
        );
      }
      return { version, changes };
    });
    if (committed.changes.length === 0) return null;
    const { version, changes } = committed;
    const kind = changes.length === 1 ? changes[0].kind : 'updated';
    await this.changes.announce(orgId, version, changes.map((change) => change.name), kind);
    for (const change of changes) {
      this.audit.recordAdminEvent(actor, { action: `policy.${change.kind === 'created' ? 'create' : change.kind === 'deleted' ? 'delete' : 'update'}`, details: forcedDetails({ policy: change.name, version }, failures) });
    }
    return version;
  }

  private async write(manager: EntityManager, orgId: string, definition: PolicyDefinition, source: string, origin: PolicyOrigin, version: number, existing: Policy | null): Promise<void> {
    const repository = manager.getRepository(Policy);
    const fields = { description: definition.description ?? null, source, definition, origin, version };
    if (existing) {
      await repository.update({ orgId, name: definition.name }, fields);
      return;
    }
    const rows: Array<{ position: string | null }> = await manager.query('SELECT max(position) AS position FROM policies WHERE org_id = $1', [orgId]);
    await repository.insert({ orgId, name: definition.name, ...fields, position: Number(rows[0]?.position ?? 0) + 1 });
  }
}

/**
 * Proposed policies (validate, simulate, backtest): a policies file (`policies:` list) or one
 * policy, as YAML or JSON text.
 */
export function parseProposedSource(source: string): PolicyDefinition[] {
  return loadPolicyFileOrDocument(source, 'proposed');
}

/** A policy being rolled out changes through its rollout (promoted or aborted), or another edit would be compared as the canary. */
async function refuseRolledOut(manager: EntityManager, orgId: string, name: string): Promise<void> {
  const rows: Array<{ id: string }> = await manager.query(`SELECT id FROM policy_canaries WHERE org_id = $1 AND policy_name = $2 AND state = 'running'`, [orgId, name]);
  if (rows.length > 0) throw new AppError(ErrorCode.Conflict, `policy ${name} has a canary rollout running (${rows[0].id}): promote or abort it first`);
}

/** A policy kept in git changes there, never through the API or the CLI: the next commit would undo the edit. */
function refuseGitOwned(policy: Policy | null): void {
  if (policy?.origin === 'git') throw new AppError(ErrorCode.Conflict, `policy ${policy.name} is kept in git (POLICIES_GIT_URL or PUT /admin/policy-git): change it in the repository`);
}

function toView(policy: Policy): PolicyView {
  const { definition } = policy;
  return {
    name: policy.name,
    description: definition.description,
    match: definition.match,
    default: definition.default,
    mode: definition.mode ?? 'enforce',
    rules: definition.rules,
    origin: policy.origin,
    version: policy.version,
    createdAt: policy.createdAt.toISOString(),
    updatedAt: policy.updatedAt.toISOString(),
  };
}
