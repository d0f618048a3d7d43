import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Logger } from 'pino';
import { ClusterEvents } from '../changes/cluster-events';
import { LOGGER } from '../../core/logging/logging.module';
import { compilePolicies } from '../../core/policy-engine/compile-policies';
import { formatPolicyError, PolicyLoadError } from '../../core/policy-engine/errors';
import { PolicySet } from '../../core/policy-engine/policy-set';
import type { PolicyDefinition } from '../../core/policy-engine/types';
import type { LoadedPolicies, PolicySource } from '../../core/decision/decision-sources';
import { LoadedCanary, loadCanary } from '../../core/decision/canary-cohort';

/**
 * Compiled policy sets per organization for the decision path: compiled once per change, kept
 * in memory, evicted on every instance through the policies.changed event. A stored policy
 * that no longer compiles fails closed: it is replaced by a policy that denies what it matches.
 */
@Injectable()
export class PolicyRegistry implements PolicySource, OnModuleInit {
  private readonly loaded = new Map<string, LoadedPolicies>();
  private readonly loading = new Map<string, Promise<LoadedPolicies>>();
  private evictions = 0;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly events: ClusterEvents,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onModuleInit(): void {
    this.events.subscribe((event) => {
      if (event.type === 'policies.changed') this.evict(event.orgId);
      else if (event.type === 'resync') this.evictAll();
    });
  }

  /** The organization's policies; resolved at once when compiled. */
  get(orgId: string): Promise<LoadedPolicies> {
    const loaded = this.loaded.get(orgId);
    return loaded !== undefined ? Promise.resolve(loaded) : this.load(orgId);
  }

  private evict(orgId: string): void {
    this.evictions++;
    this.loaded.delete(orgId);
    this.loading.delete(orgId);
  }

  private evictAll(): void {
    this.evictions++;
    this.loaded.clear();
    this.loading.clear();
  }

  private load(orgId: string): Promise<LoadedPolicies> {
    const inFlight = this.loading.get(orgId);
    if (inFlight) return inFlight;
    const evictionsAtStart = this.evictions;
    const promise = this.read(orgId).then((loaded) => {
      if (this.loading.get(orgId) === promise) this.loading.delete(orgId);
      if (this.evictions === evictionsAtStart) this.loaded.set(orgId, loaded);
      return loaded;
    });
    this.loading.set(orgId, promise);
    promise.catch(() => this.loading.delete(orgId));
    return promise;
  }

  private async read(orgId: string): Promise<LoadedPolicies> {
    const rows: Array<{ definition: PolicyDefinition; version: string | null }> = await this.dataSource.query(
      `SELECT p.definition, (SELECT max(version) FROM policy_versions WHERE org_id = $1) AS version
       FROM policies p WHERE p.org_id = $1 ORDER BY p.position`,
      [orgId],
    );
    const version = rows.length > 0 ? Number(rows[0].version ?? 0) : await this.currentVersion(orgId);
    const definitions = rows.map((row) => row.definition);
    const loaded: LoadedPolicies = { set: this.compile(orgId, definitions), version };
    const canary = await this.canaryOf(orgId, definitions);
    if (canary !== undefined) loaded.canary = canary;
    return loaded;
  }

  /**
   * The organization's running rollout, compiled. Checked when it started; should it no longer
   * compile beside the policies in force, every agent decides on those (logged), which is what
   * ending it would do.
   */
  private async canaryOf(orgId: string, definitions: PolicyDefinition[]): Promise<LoadedCanary | undefined> {
    const rows: Array<{ id: string; policy_name: string; share: number | null; sidecar_labels: Record<string, string> | null; definition: PolicyDefinition }> = await this.dataSource.query(
      `SELECT id, policy_name, share, sidecar_labels, definition FROM policy_canaries WHERE org_id = $1 AND state = 'running'`,
      [orgId],
    );
    if (rows.length === 0) return undefined;
    const [row] = rows;
    try {
      // A rollout to labelled sidecars puts no agent of the gateway's own decisions in its canary cohort: they are all its stable cohort.
      const target = row.share === null ? { sidecarLabels: row.sidecar_labels ?? {} } : { share: row.share };
      return loadCanary(definitions, { id: row.id, policy: row.policy_name, ...target, definition: row.definition }, orgId);
    } catch (error) {
      if (!(error instanceof PolicyLoadError)) throw error;
      this.logger.error({ orgId, rollout: row.id, errors: error.errors.map(formatPolicyError) }, 'canary rollout does not compile beside the policies in force; every agent decides on those');
      return undefined;
    }
  }

  private async currentVersion(orgId: string): Promise<number> {
    const rows: Array<{ version: string | null }> = await this.dataSource.query('SELECT max(version) AS version FROM policy_versions WHERE org_id = $1', [orgId]);
    return Number(rows[0]?.version ?? 0);
  }

  private compile(orgId: string, definitions: PolicyDefinition[]): PolicySet {
    try {
      return compilePolicies(definitions, { namespace: orgId });
    } catch (error) {
      if (!(error instanceof PolicyLoadError)) throw error;
      this.logger.error({ orgId, errors: error.errors.map(formatPolicyError) }, 'stored policies do not compile; failing closed');
      return compilePolicies(definitions.map((definition) => (compiles(definition, orgId) ? definition : denyAll(definition))), { namespace: orgId });
    }
  }
}

function compiles(definition: PolicyDefinition, orgId: string): boolean {
  try {
    compilePolicies([definition], { namespace: orgId });
    return true;
  } catch {
    return false;
  }
}

function denyAll(definition: PolicyDefinition): PolicyDefinition {
  const rules: PolicyDefinition['rules'] = [
    { name: 'load-failure', condition: 'true', action: 'deny', reason: `Policy ${definition.name} could not be loaded; denied until it is fixed` },
  ];
  return definition.match ? { name: definition.name, match: definition.match, rules } : { name: definition.name, rules };
}
