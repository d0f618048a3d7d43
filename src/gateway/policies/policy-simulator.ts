import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { auditSelectList, readAudit, StoredAudit } from '../../core/audit-record/audit-entry';
import { expandInput } from '../../core/audit-record/audit-input';
import { AgentDirectory } from '../agents/agent-directory';
import { compilePolicies } from '../../core/policy-engine/compile-policies';
import { PolicySet } from '../../core/policy-engine/policy-set';
import { SlidingWindowLimiter } from '../../core/policy-engine/sliding-window-limiter';
import type { Decision, PolicyDefinition, SessionFacts } from '../../core/policy-engine/types';
import { parseProposedSource } from './policies.service';
import { parseOrThrow } from './policy-errors';
import { proposedSourceOf } from './policy-source';
import { DecisionService } from '../../core/decision/decision.service';
import { DecisionMemory } from '../../core/decision/decision-memory';
import { completeInput } from '../../core/decision/decision-input';
import { SessionStore } from '../../core/decision/session-store';
import { BacktestPolicyCount, BacktestReportView, BacktestRequestDto, DecisionView, SimulateRequestDto, SimulationView } from './simulation.dto';

const PAGE = 2000;
const MAX_FLIPS_LISTED = 1000;
/** Most distinct actions a simulated session may give (a session remembers 256). */
const MAX_SIMULATED_ACTIONS = 256;

/** What a backtest reads of each recorded decision. */
const RECORDED_FIELDS = ['id', 'ts', 'orgId', 'agentId', 'agentName', 'trustTier', 'action', 'decision', 'policyName', 'rule', 'reason', 'input'] as const;
type RecordedDecision = Pick<StoredAudit, (typeof RECORDED_FIELDS)[number]>;
const RECORDED_COLUMNS = auditSelectList(RECORDED_FIELDS);

/**
 * What-if tools: simulate one decision with its full trace, and backtest proposed policies
 * against the decisions the audit trail recorded, so no policy change goes live blind.
 */
@Injectable()
export class PolicySimulator {
  constructor(
    private readonly decisions: DecisionService,
    private readonly memory: DecisionMemory,
    private readonly agents: AgentDirectory,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /** One decision on the current (or proposed) policies, with every rule tried; nothing is counted. */
  async simulate(principal: AdminPrincipal, request: SimulateRequestDto): Promise<SimulationView> {
    const current = await this.decisions.policiesOf(principal.orgId);
    const proposed = request.policies === undefined ? null : this.proposedSet(principal.orgId, current.set, request.policies, request.replace);
    const input = completeInput(await this.withAgentRecord(principal, request.input), principal.orgId);
    const session = await this.sessionOf(principal, request.input);
    if (session !== undefined) input.session = session;
    const explanation = proposed
      ? await proposed.explain(input, { limiter: this.decisions.limiter, nowMs: Date.now() })
      : await this.decisions.explain(current, input);
    return {
      ...decisionView(explanation.decision),
      enforced: this.decisions.enforcing || explanation.decision.effect === 'allow',
      policyVersion: proposed ? null : current.version,
      trace: explanation.trace,
    };
  }

  /** Replays recorded decisions (oldest first) through proposed policies and reports every flip. */
  async backtest(principal: AdminPrincipal, request: BacktestRequestDto): Promise<BacktestReportView> {
    const current = await this.decisions.policiesOf(principal.orgId);
    const proposed = this.proposedSet(principal.orgId, current.set, request.policies, request.replace);
    const from = new Date(request.from);
    const to = request.to ? new Date(request.to) : new Date();
    if (to <= from) throw AppError.invalid('to must be later than from');
    const limit = request.limit ?? 10_000;
    // A fresh limiter replayed on the recorded timestamps reproduces rate limits as they would have been.
    const limiter = new SlidingWindowLimiter();
    // Sessions replayed likewise: what the proposed policies' label rules add, and the calls they let through (docs/policies.md "Seen").
    const replay = new SessionStore();
    const report: BacktestReportView = {
      from: from.toISOString(),
      to: to.toISOString(),
      examined: 0,
      skipped: 0,
      unchanged: 0,
      allowToDeny: 0,
      denyToAllow: 0,
      byPolicy: [],
      flips: [],
      truncated: false,
    };
    const byPolicy = new Map<string, BacktestPolicyCount>();
    let cursor: { ts: number; id: string } | null = null;
    while (report.examined < limit) {
      const rows = await this.page(principal.orgId, from, to, cursor, Math.min(PAGE, limit - report.examined));
      if (rows.length === 0) break;
      for (const row of rows) {
        report.examined++;
        if (row.input === null) {
          report.skipped++;
          continue;
        }
        const input = completeInput(expandInput(JSON.parse(row.input), row), principal.orgId);
        const key = proposed.usesSession ? { orgId: principal.orgId, agentId: row.agentId ?? '', sessionId: input.session?.id ?? '' } : undefined;
        if (key !== undefined) input.session = replayedFacts(input.session, replay.recall(key, row.ts));
        const after = await proposed.evaluate(input, { limiter, nowMs: row.ts });
        if (key !== undefined && after.effect === 'allow') replay.remember(key, input.action, after.labels, row.ts);
        this.tally(report, byPolicy, row, after);
      }
      const last = rows[rows.length - 1];
      cursor = { ts: last.ts, id: last.id };
      if (rows.length < PAGE) break;
    }
    report.truncated = report.examined >= limit && (await this.page(principal.orgId, from, to, cursor, 1)).length > 0;
    report.byPolicy = [...byPolicy.values()].sort((a, b) => b.allowToDeny + b.denyToAllow - (a.allowToDeny + a.denyToAllow));
    return report;
  }

  private tally(report: BacktestReportView, byPolicy: Map<string, BacktestPolicyCount>, row: RecordedDecision, after: Decision): void {
    if (row.decision === after.effect) {
      report.unchanged++;
      return;
    }
    const toDeny = after.effect === 'deny';
    const responsible = toDeny ? after.policy : (row.policyName ?? 'default');
    const counts = byPolicy.get(responsible) ?? { policy: responsible, allowToDeny: 0, denyToAllow: 0 };
    byPolicy.set(responsible, counts);
    if (toDeny) {
      report.allowToDeny++;
      counts.allowToDeny++;
    } else {
      report.denyToAllow++;
      counts.denyToAllow++;
    }
    if (report.flips.length >= MAX_FLIPS_LISTED) return;
    report.flips.push({
      id: row.id,
      timestamp: new Date(row.ts).toISOString(),
      agentId: row.agentId,
      action: row.action,
      before: { decision: row.decision, policy: row.policyName ?? 'default', rule: row.rule, reason: row.reason ?? '' },
      after: decisionView(after),
    });
  }

  private async page(orgId: string, from: Date, to: Date, cursor: { ts: number; id: string } | null, limit: number): Promise<RecordedDecision[]> {
    const rows: Array<Record<string, unknown>> = await this.dataSource.query(
      `SELECT ${RECORDED_COLUMNS} FROM audit_entries
       WHERE org_id = $1 AND kind = 'decision' AND ts >= $2 AND ts < $3
         AND ($4::timestamptz IS NULL OR (ts, id) > ($4, $5))
       ORDER BY ts, id LIMIT $6`,
      [orgId, from, to, cursor ? new Date(cursor.ts) : null, cursor?.id ?? '', limit],
    );
    return rows.map((row) => readAudit(row, RECORDED_FIELDS));
  }

  /** Proposed policies over the current ones: same names replaced, new names appended (or only the proposed, with `replace`). */
  private proposedSet(orgId: string, current: PolicySet, proposedValue: unknown, replace = false): PolicySet {
    const proposed = parseOrThrow(() => parseProposedSource(proposedSourceOf(proposedValue)));
    const byName = new Map(proposed.map((definition) => [definition.name, definition]));
    const merged: PolicyDefinition[] = replace
      ? proposed
      : [
          ...current.policies.map((policy) => byName.get(policy.name) ?? policy.definition),
          ...proposed.filter((definition) => current.get(definition.name) === undefined),
        ];
    return parseOrThrow(() => compilePolicies(merged, { namespace: orgId }));
  }

  /**
   * The session facts a simulation decides on: those the input gives (checked here: counts are
   * numbers), or with `sessionId` those the agent's session holds now, peeked (nothing is
   * remembered); else undefined (completeInput's, or none).
   */
  private async sessionOf(principal: AdminPrincipal, input: SimulateRequestDto['input']): Promise<SessionFacts | undefined> {
    if (input.session !== undefined && input.sessionId !== undefined) throw AppError.invalid('give input.session or input.sessionId, not both');
    const calls = input.session?.calls;
    if (calls !== undefined) {
      const entries = Object.entries(calls);
      if (entries.length > MAX_SIMULATED_ACTIONS) throw AppError.invalid(`input.session.calls must have at most ${MAX_SIMULATED_ACTIONS} actions`);
      for (const [action, count] of entries) if (typeof count !== 'number' || !Number.isInteger(count) || count < 0) throw AppError.invalid(`input.session.calls["${action.slice(0, 64)}"] must be a whole number, 0 or more`);
    }
    if (input.sessionId === undefined) return undefined;
    if (input.agentId === undefined) throw AppError.invalid('input.sessionId needs input.agentId');
    const facts = await this.memory.sessionFacts(principal.orgId, input.agentId, input.sessionId, Date.now());
    return { id: facts.id, labels: [...facts.labels], agent_labels: [...facts.agent_labels], calls: { ...facts.calls } };
  }

  private async withAgentRecord(principal: AdminPrincipal, input: SimulateRequestDto['input']): Promise<unknown> {
    if (input.agentId === undefined) return input;
    const agent = await this.agents.get(input.agentId);
    if (agent === null || agent.orgId !== principal.orgId) throw AppError.notFound('agent', input.agentId);
    return { ...input, agent: agent.facts };
  }
}

function decisionView(decision: Decision): DecisionView {
  const view: DecisionView = { decision: decision.effect, policy: decision.policy, rule: decision.rule, reason: decision.reason };
  if (decision.rateLimit) view.rateLimit = { ...decision.rateLimit };
  if (decision.alerts) view.alerts = decision.alerts.map((alert) => ({ ...alert }));
  return view;
}

/**
 * What a replayed call reads of its session: the facts recorded with it (what it read live)
 * together with what the replay itself remembered, so a label the proposed policies add counts
 * as it would have. Labels only accumulate: those of both. Calls: the recorded ones, else (an
 * entry recorded without session facts) the replayed ones.
 */
function replayedFacts(recorded: SessionFacts | undefined, replayed: SessionFacts): SessionFacts {
  if (recorded === undefined) return replayed;
  return {
    id: recorded.id,
    labels: union(recorded.labels, replayed.labels),
    agent_labels: union(recorded.agent_labels, replayed.agent_labels),
    calls: recorded.calls,
  };
}

function union(a: readonly string[], b: readonly string[]): readonly string[] {
  return b.every((label) => a.includes(label)) ? a : [...new Set([...a, ...b])];
}
