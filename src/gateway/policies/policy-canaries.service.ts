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
    const id = newId('can');
    let failures: Awaited<ReturnType<PolicyTestsService['failuresWith']>> = [];
    const version = await this.dataSource.transaction(async (manager) => {
      const next = await lockNextVersion(manager, orgId);
      const running = await manager.getRepository(PolicyCanary).findOne({ where: { orgId, state: 'running' } });
      if (running !== null) throw new AppError(ErrorCode.Conflict, `canary rollout ${running.id} of policy ${running.policyName} is running: promote or abort it first`);
      const inForce = await manager.getRepository(Policy).find({ where: { orgId }, order: { position: 'ASC' } });
      const current = inForce.find((policy) => policy.name === request.policy);
      if (current?.origin === 'git') throw new AppError(ErrorCode.Conflict, `policy ${request.policy} is kept in git (POLICIES_GIT_URL): change it in the repository`);
      if (current !== undefined && current.source === request.source) throw AppError.invalid(`the new version of ${request.policy} is the version in force`);
      failures = await this.tests.failuresWith(manager, orgId, canaryDefinitions(inForce.map((policy) => policy.definition), definition));
      if (failures.length > 0 && !force) throw testsFailed(failures, 'The new version fails stored policy tests');
      await manager.getRepository(PolicyCanary).insert({
        id,
        orgId,
        policyName: request.policy,
        source: request.source,
        definition,
        share: request.share,
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
    this.audit.recordAdminEvent(actor, { action: 'policy.canary.start', details: forcedDetails({ rollout: id, policy: request.policy, share: request.share, version }, failures) });
    this.tell({ step: 'started', canary: view });
    return view;
  }

  async list(principal: AdminPrincipal): Promise<CanaryListView> {
    const rows = await this.dataSource.getRepository(PolicyCanary).find({ where: { orgId: principal.orgId }, order: { startedAt: 'DESC' }, take: LISTED });
    return { canaries: await Promise.all(rows.map(async (row) => toView(row, row.state === 'running' ? await this.statsOf(row) : row.stats))) };
  }

  /** One rollout with both cohorts' counts and rates: live while it runs, as they were when it ended after. */
  async get(principal: AdminPrincipal, id: string): Promise<CanaryView> {
    const row = await this.find(principal.orgId, id);
    return toView(row, row.state === 'running' ? await this.statsOf(row) : row.stats);
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

  /** Each cohort's decisions over the rollout so far, from the audit trail (decisions where the policy applied). */
  async statsOf(row: PolicyCanary): Promise<CanaryStats> {
    const rows: Array<{ cohort: string; decisions: string; denied: string; approvals: string; errors: string }> = await this.dataSource.query(
      `SELECT details->'canary'->>'cohort' AS cohort, count(*) AS decisions,
         count(*) FILTER (WHERE decision = 'deny' AND status IS DISTINCT FROM 202) AS denied,
         count(*) FILTER (WHERE status = 202) AS approvals,
         count(*) FILTER (WHERE status >= 500 OR upstream_status >= 500) AS errors
       FROM audit_entries
       WHERE org_id = $1 AND ts >= $2 AND ts <= $3 AND kind = 'decision' AND details->'canary'->>'rollout' = $4
       GROUP BY 1`,
      [row.orgId, row.startedAt, row.endedAt ?? new Date(), row.id],
    );
    const of = (cohort: string): CohortStats => {
      const found = rows.find((item) => item.cohort === cohort);
      return found === undefined ? EMPTY : { decisions: Number(found.decisions), denied: Number(found.denied), approvals: Number(found.approvals), errors: Number(found.errors) };
    };
    return { canary: of('canary'), stable: of('stable') };
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
