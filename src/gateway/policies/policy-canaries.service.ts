import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { newId } from '../../core/common/ids';
import { AuditService } from '../audit/audit.service';
import { canaryDefinitions } from '../../core/decision/canary-cohort';
import { parseDuration } from '../../core/policy-engine/duration';
import { loadPolicyDocument } from '../../core/policy-engine/loader';
import { PolicyChangeEvents } from '../changes/policy-change-events';
import { PolicyVersion } from '../changes/policy-version.entity';
import { lockNextVersion } from '../changes/policy-versions';
import { CanaryListView, CanaryStartDto, CanaryView, CohortView } from './policies.dto';
import { PoliciesService, PolicyActor } from './policies.service';
import { CanaryState, CanaryStats, CohortStats, PolicyCanary } from './policy-canary.entity';
import { parseOrThrow } from './policy-errors';
import { forcedDetails, PolicyTestsService, testsFailed } from './policy-tests.service';
import { Policy } from './policy.entity';
import { MAX_SIDECAR_LABELS, SIDECAR_LABEL_NAME, SIDECAR_LABEL_VALUE } from '../../core/edge-protocol/sidecar-protocol';

const DEFAULT_WINDOW = '1h';
const MIN_WINDOW_MS = 1000;
const MAX_WINDOW_MS = 30 * 86_400_000;
const DEFAULT_MARGIN = 5;
const DEFAULT_MIN_DECISIONS = 20;
/** The history the list answers with. */
const LISTED = 50;

/** A step of a rollout: what alerting hears (docs/alerts.md, trigger `policy_canary`). */
export interface CanaryStep {
  step: 'started' | 'promoted' | 'rolled_back' | 'aborted';
  canary: CanaryView;
}

/** The gateway's own actor for the steps the comparison takes. */
const GATEWAY = (orgId: string): PolicyActor => ({ orgId, tokenId: 'gateway' });

const EMPTY: CohortStats = { decisions: 0, denied: 0, approvals: 0, errors: 0 };

/**
 * Canary rollouts (docs/policies.md "Canary rollouts"): a new version of one policy in force for
 * a share of the organization's agents, compared with the rest on the decisions the policy
 * applies to, then promoted, rolled back or aborted. Every step takes a policy version (so SDK
 * caches, bundles and Subscribe streams hear of it), is written to the audit trail and told to
 * the step listeners (alerting). The counts come from the audit trail, so decisions made on any
 * instance, and at edge sidecars once their entries arrive, are compared alike.
 */
@Injectable()
export class PolicyCanariesService {
  private readonly listeners = new Set<(step: CanaryStep) => void>();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly policies: PoliciesService,
    private readonly tests: PolicyTestsService,
    private readonly changes: PolicyChangeEvents,
    private readonly audit: AuditService,
  ) {}

  /** Hears every step taken in this process; returns the removal. */
  onStep(listener: (step: CanaryStep) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Starts a rollout: 400 for a version that does not load or a shadow one, 409 while another
   * runs in the organization, for a policy git owns, or (policy_tests_failed) when the new
   * version fails stored tests, unless forced.
   */
  async start(actor: PolicyActor, request: CanaryStartDto, force = false): Promise<CanaryView> {
    const { orgId } = actor;
    const definition = parseOrThrow(() => loadPolicyDocument(request.source, `policy ${request.policy}`));
    if (definition.name !== request.policy) throw AppError.invalid(`name in the source (${definition.name}) does not match policy (${request.policy})`);
    if (definition.mode === 'shadow') throw AppError.invalid('a canary rollout puts a version in force for some agents: send it without mode: shadow (a shadow policy is tried on all traffic without one)');
    const windowMs = windowOf(request.window ?? DEFAULT_WINDOW);
    const target = targetOf(request);
    const id = newId('can');
    let failures: Awaited<ReturnType<PolicyTestsService['failuresWith']>> = [];
    const version = await this.dataSource.transaction(async (manager) => {
      const next = await lockNextVersion(manager, orgId);
      const running = await manager.getRepository(PolicyCanary).findOne({ where: { orgId, state: 'running' } });
      if (running !== null) throw new AppError(ErrorCode.Conflict, `canary rollout ${running.id} of policy ${running.policyName} is running: promote or abort it first`);
      const inForce = await manager.getRepository(Policy).find({ where: { orgId }, order: { position: 'ASC' } });
      const current = inForce.find((policy) => policy.name === request.policy);
      if (current?.origin === 'git') throw new AppError(ErrorCode.Conflict, `policy ${request.policy} is kept in git (POLICIES_GIT_URL or PUT /admin/policy-git): change it in the repository`);
      if (current !== undefined && current.source === request.source) throw AppError.invalid(`the new version of ${request.policy} is the version in force`);
      failures = await this.tests.failuresWith(manager, orgId, canaryDefinitions(inForce.map((policy) => policy.definition), definition));
      if (failures.length > 0 && !force) throw testsFailed(failures, 'The new version fails stored policy tests');
      await manager.getRepository(PolicyCanary).insert({
        id,
        // Entries recorded before the start carry no cohort of this rollout: counting starts here.
        countedSeq: await chainHead(manager, orgId),
        orgId,
        policyName: request.policy,
        source: request.source,
        definition,
        share: target.share,
        sidecarLabels: target.sidecarLabels,
        windowMs,
        margin: request.margin ?? DEFAULT_MARGIN,
        minDecisions: request.minDecisions ?? DEFAULT_MIN_DECISIONS,
        state: 'running',
        startedBy: actor.tokenId,
        startedAt: new Date(),
      });
      await manager.getRepository(PolicyVersion).insert({ orgId, version: next, policyName: request.policy, kind: 'canary_started', source: request.source, actor: actor.tokenId });
      return next;
    });
    await this.changes.announce(orgId, version, [request.policy], 'canary_started');
    const view = await this.get(actor, id);
    this.audit.recordAdminEvent(actor, { action: 'policy.canary.start', details: forcedDetails({ rollout: id, policy: request.policy, ...(target.share === null ? { sidecarLabels: target.sidecarLabels } : { share: target.share }), version }, failures) });
    this.tell({ step: 'started', canary: view });
    return view;
  }

  async list(principal: AdminPrincipal): Promise<CanaryListView> {
    const rows = await this.dataSource.getRepository(PolicyCanary).find({ where: { orgId: principal.orgId }, order: { startedAt: 'DESC' }, take: LISTED });
    return { canaries: await Promise.all(rows.map(async (row) => toView(row, await this.statsOf(row)))) };
  }

  /** One rollout with both cohorts' counts and rates: live while it runs, as they were when it ended after. */
  async get(principal: AdminPrincipal, id: string): Promise<CanaryView> {
    const row = await this.find(principal.orgId, id);
    return toView(row, await this.statsOf(row));
  }

  /** Puts the new version in force for every agent (refused like any change when stored tests fail, unless forced). */
  async promote(actor: PolicyActor, id: string, force = false, outcome = 'promoted by hand'): Promise<CanaryView> {
    const row = await this.find(actor.orgId, id);
    refuseEnded(row);
    const stats = await this.statsOf(row);
    const version = await this.policies.promoteCanary(
      actor,
      { name: row.policyName, source: row.source, definition: row.definition, end: (manager) => endIn(manager, row, 'promoted', actor, outcome, stats) },
      force,
    );
    return this.ended(actor, row, 'promoted', version);
  }

  /** Ends the rollout by hand: every agent decides on the version in force again. */
  abort(actor: PolicyActor, id: string): Promise<CanaryView> {
    return this.endWithout(actor, id, 'aborted', 'aborted by hand');
  }

  /**
   * Compares every running rollout and takes the step it calls for (docs/policies.md "Canary
   * rollouts"): rolled back once both cohorts have `minDecisions` and the canary's deny rate
   * exceeds the rest's by more than `margin` points, or at the window's end when it does;
   * promoted at the window's end otherwise. A promotion the stored tests refuse rolls back.
   * Steps are conditional on the rollout still running, so instances comparing at once take
   * each step once.
   */
  async judge(nowMs = Date.now()): Promise<void> {
    const running = await this.dataSource.getRepository(PolicyCanary).find({ where: { state: 'running' } });
    for (const row of running) {
      const stats = await this.statsOf(row);
      const over = nowMs >= row.startedAt.getTime() + row.windowMs;
      const compared = over || (stats.canary.decisions >= row.minDecisions && stats.stable.decisions >= row.minDecisions);
      const actor = GATEWAY(row.orgId);
      try {
        if (compared && exceeds(row, stats)) await this.endWithout(actor, row.id, 'rolled_back', rollbackReason(row, stats));
        else if (over) await this.promote(actor, row.id, false, `promoted after its window: ${comparison(row, stats)}`);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        if (error.code === ErrorCode.Conflict && /already ended/.test(error.message)) continue;
        await this.endWithout(actor, row.id, 'rolled_back', `rolled back: its promotion was refused: ${error.message}`).catch(() => undefined);
      }
    }
  }

  /**
   * Each cohort's decisions over the rollout so far (decisions where the policy applied), from
   * the audit trail, counted incrementally: the entries the organization's hash chain recorded
   * since the last count are added to the stored counts, under the rollout's row lock, so the
   * cost of a count is what was recorded since the one before, whatever the window, and two
   * instances never count an entry twice. Entries are numbered in commit order (the chain head
   * is locked until its batch commits), so none is skipped.
   */
  async statsOf(row: PolicyCanary): Promise<CanaryStats> {
    if (row.state !== 'running') return row.stats ?? { canary: EMPTY, stable: EMPTY };
    return this.dataSource.transaction(async (manager) => {
      const locked = await manager.getRepository(PolicyCanary).findOne({ where: { id: row.id, orgId: row.orgId }, lock: { mode: 'pessimistic_write' } });
      const counted = locked?.stats ?? { canary: EMPTY, stable: EMPTY };
      if (locked === null || locked.state !== 'running') return counted;
      const head = await chainHead(manager, row.orgId);
      if (head <= locked.countedSeq) return counted;
      const rows: Array<{ cohort: string; decisions: string; denied: string; approvals: string; errors: string }> = await manager.query(
        `SELECT details->'canary'->>'cohort' AS cohort, count(*) AS decisions,
           count(*) FILTER (WHERE decision = 'deny' AND status IS DISTINCT FROM 202) AS denied,
           count(*) FILTER (WHERE status = 202) AS approvals,
           count(*) FILTER (WHERE status >= 500 OR upstream_status >= 500) AS errors
         FROM audit_entries
         WHERE org_id = $1 AND seq > $2 AND seq <= $3 AND kind = 'decision' AND details->'canary'->>'rollout' = $4
         GROUP BY 1`,
        [row.orgId, locked.countedSeq, head, row.id],
      );
      const added = (cohort: string, base: CohortStats): CohortStats => {
        const found = rows.find((item) => item.cohort === cohort);
        if (found === undefined) return base;
        return {
          decisions: base.decisions + Number(found.decisions),
          denied: base.denied + Number(found.denied),
          approvals: base.approvals + Number(found.approvals),
          errors: base.errors + Number(found.errors),
        };
      };
      const stats = { canary: added('canary', counted.canary), stable: added('stable', counted.stable) };
      await manager.getRepository(PolicyCanary).update({ id: row.id, orgId: row.orgId }, { stats, countedSeq: head });
      return stats;
    });
  }

  private async endWithout(actor: PolicyActor, id: string, state: 'rolled_back' | 'aborted', outcome: string): Promise<CanaryView> {
    const row = await this.find(actor.orgId, id);
    refuseEnded(row);
    const stats = await this.statsOf(row);
    const version = await this.dataSource.transaction(async (manager) => {
      const next = await lockNextVersion(manager, row.orgId);
      await endIn(manager, row, state, actor, outcome, stats);
      await manager.getRepository(PolicyVersion).insert({ orgId: row.orgId, version: next, policyName: row.policyName, kind: 'canary_ended', source: null, actor: actor.tokenId });
      return next;
    });
    await this.changes.announce(row.orgId, version, [row.policyName], 'canary_ended');
    return this.ended(actor, row, state, version);
  }

  private async ended(actor: PolicyActor, row: PolicyCanary, state: Exclude<CanaryState, 'running'>, version: number): Promise<CanaryView> {
    const view = await this.get(actor, row.id);
    const action = state === 'promoted' ? 'promote' : state === 'rolled_back' ? 'rollback' : 'abort';
    this.audit.recordAdminEvent(actor, {
      action: `policy.canary.${action}`,
      reason: view.outcome ?? undefined,
      details: { rollout: row.id, policy: row.policyName, version, canary: view.canary, stable: view.stable },
    });
    this.tell({ step: state, canary: view });
    return view;
  }

  private async find(orgId: string, id: string): Promise<PolicyCanary> {
    const row = await this.dataSource.getRepository(PolicyCanary).findOne({ where: { orgId, id } });
    if (row === null) throw AppError.notFound('canary rollout', id);
    return row;
  }

  private tell(step: CanaryStep): void {
    for (const listener of this.listeners) listener(step);
  }
}

/** The place of the organization's newest committed audit entry in its hash chain (0 before the first). */
async function chainHead(manager: EntityManager, orgId: string): Promise<number> {
  const rows: Array<{ seq: string }> = await manager.query('SELECT seq FROM audit_chain_heads WHERE org_id = $1', [orgId]);
  return rows.length === 0 ? 0 : Number(rows[0].seq);
}

/** Ends the rollout in the caller's transaction, if it still runs; 409 when another step came first. */
async function endIn(manager: EntityManager, row: PolicyCanary, state: Exclude<CanaryState, 'running'>, actor: PolicyActor, outcome: string, stats: CanaryStats): Promise<void> {
  const result = await manager
    .createQueryBuilder()
    .update(PolicyCanary)
    .set({ state, endedBy: actor.tokenId, endedAt: new Date(), outcome, stats })
    .where('id = :id AND org_id = :orgId AND state = :running', { id: row.id, orgId: row.orgId, running: 'running' })
    .execute();
  if (!result.affected) throw new AppError(ErrorCode.Conflict, `canary rollout ${row.id} already ended`);
}

function refuseEnded(row: PolicyCanary): void {
  if (row.state !== 'running') throw new AppError(ErrorCode.Conflict, `canary rollout ${row.id} already ended (${row.state.replace('_', ' ')})`);
}

/** Who decides on the new version: a share of the agents, or every agent at the sidecars the labels select; one of the two, never both. */
function targetOf(request: CanaryStartDto): { share: number; sidecarLabels: null } | { share: null; sidecarLabels: Record<string, string> } {
  if (request.share !== undefined && request.sidecarLabels !== undefined) throw AppError.invalid('give either share (a percentage of the agents) or sidecarLabels (the labels of the sidecars that decide on the new version), not both');
  if (request.share !== undefined) return { share: request.share, sidecarLabels: null };
  if (request.sidecarLabels === undefined) throw AppError.invalid('share (a whole percentage from 1 to 99) or sidecarLabels (the labels of the sidecars that decide on the new version) is required');
  const entries = Object.entries(request.sidecarLabels);
  if (entries.length === 0) throw AppError.invalid('sidecarLabels must name at least one label: an empty selector would select every sidecar');
  if (entries.length > MAX_SIDECAR_LABELS) throw AppError.invalid(`sidecarLabels names more than ${MAX_SIDECAR_LABELS} labels`);
  for (const [name, value] of entries) {
    if (!SIDECAR_LABEL_NAME.test(name)) throw AppError.invalid(`sidecarLabels: label name ${JSON.stringify(name)} is not 1-63 letters, digits or . _ / - (starting and ending with a letter or digit)`);
    if (typeof value !== 'string' || !SIDECAR_LABEL_VALUE.test(value)) throw AppError.invalid(`sidecarLabels: the value of label ${name} must be a string of 0-63 letters, digits or . _ -`);
  }
  return { share: null, sidecarLabels: Object.fromEntries(entries) };
}

function windowOf(text: string): number {
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch {
    throw AppError.invalid(`window ${JSON.stringify(text)} is not a duration such as 30m, 1h or 2d`);
  }
  if (ms < MIN_WINDOW_MS || ms > MAX_WINDOW_MS) throw AppError.invalid('window must be from 1s to 30d');
  return ms;
}

function exceeds(row: PolicyCanary, stats: CanaryStats): boolean {
  return rate(stats.canary.denied, stats.canary.decisions) - rate(stats.stable.denied, stats.stable.decisions) > row.margin;
}

function comparison(row: PolicyCanary, stats: CanaryStats): string {
  const canary = rate(stats.canary.denied, stats.canary.decisions);
  const stable = rate(stats.stable.denied, stats.stable.decisions);
  return `deny rate ${canary}% in the canary (${stats.canary.decisions} decisions) against ${stable}% in the rest (${stats.stable.decisions}), margin ${row.margin} points`;
}

function rollbackReason(row: PolicyCanary, stats: CanaryStats): string {
  return `rolled back: ${comparison(row, stats)}`;
}

/** Percent, one decimal. */
function rate(count: number, total: number): number {
  return total === 0 ? 0 : Math.round((count / total) * 1000) / 10;
}

function cohortView(stats: CohortStats): CohortView {
  return {
    decisions: stats.decisions,
    denied: stats.denied,
    denyRate: rate(stats.denied, stats.decisions),
    approvals: stats.approvals,
    approvalRate: rate(stats.approvals, stats.decisions),
    errors: stats.errors,
    errorRate: rate(stats.errors, stats.decisions),
  };
}

function toView(row: PolicyCanary, stats: CanaryStats | null): CanaryView {
  return {
    id: row.id,
    policy: row.policyName,
    state: row.state,
    share: row.share,
    sidecarLabels: row.sidecarLabels,
    windowMs: row.windowMs,
    margin: row.margin,
    minDecisions: row.minDecisions,
    source: row.source,
    startedBy: row.startedBy,
    startedAt: row.startedAt.toISOString(),
    endsAt: new Date(row.startedAt.getTime() + row.windowMs).toISOString(),
    endedBy: row.endedBy,
    endedAt: row.endedAt?.toISOString() ?? null,
    outcome: row.outcome,
    canary: cohortView(stats?.canary ?? EMPTY),
    stable: cohortView(stats?.stable ?? EMPTY),
  };
}
