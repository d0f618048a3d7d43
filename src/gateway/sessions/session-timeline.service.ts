import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { AgentsService } from '../agents/agents.service';
import { auditSelectList, readAudit } from '../../core/audit-record/audit-entry';
import type { DecisionDetails } from '../../core/decision/decision-details';
import { DecisionMemory } from '../../core/decision/decision-memory';
import type { SessionTimelineView, TimelineCallView, TimelineQueryDto } from './sessions.dto';

const DAY_MS = 86_400_000;
const FIELDS = ['id', 'ts', 'source', 'action', 'decision', 'policyName', 'rule', 'reason', 'details'] as const;

/**
 * One session as a timeline (docs/policies.md "Seen"): its calls in order, from the audit trail
 * (every decision entry names its session in `details.session`), each with the labels it read and
 * added and its budget, and the labels the session and the agent carry now. The query reads the
 * agent's decision entries from `from` on (24 hours by default), so its cost follows the agent's
 * traffic in that span, at most `limit` calls answered.
 */
@Injectable()
export class SessionTimelineService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly agents: AgentsService,
    private readonly memory: DecisionMemory,
  ) {}

  async timeline(admin: AdminPrincipal, query: TimelineQueryDto): Promise<SessionTimelineView> {
    const agent = await this.agents.get(admin, query.agentId);
    const sessionId = query.sessionId ?? '';
    const nowMs = Date.now();
    const from = query.from === undefined ? nowMs - DAY_MS : Date.parse(query.from);
    if (Number.isNaN(from)) throw AppError.invalid('from must be an ISO 8601 time');
    const limit = query.limit ?? 200;
    const rows: Array<Record<string, unknown>> = await this.dataSource.query(
      `SELECT ${auditSelectList([...FIELDS])} FROM audit_entries
       WHERE org_id = $1 AND agent_id = $2 AND kind = 'decision' AND ts >= $3 AND (details -> 'session' ->> 'id') = $4
       ORDER BY ts, id LIMIT $5`,
      [admin.orgId, agent.id, new Date(from), sessionId, limit + 1],
    );
    const facts = await this.memory.sessionFacts(admin.orgId, agent.id, sessionId, nowMs);
    return {
      agentId: agent.id,
      sessionId,
      labels: [...facts.labels],
      agentLabels: [...facts.agent_labels],
      calls: rows.slice(0, limit).map((row) => callOf(readAudit(row, FIELDS))),
      truncated: rows.length > limit,
    };
  }
}

function callOf(entry: ReturnType<typeof readAudit<(typeof FIELDS)[number]>>): TimelineCallView {
  const details = (typeof entry.details === 'string' ? JSON.parse(entry.details) : entry.details) as DecisionDetails | null;
  const session = details?.session;
  return {
    id: entry.id,
    timestamp: new Date(entry.ts).toISOString(),
    source: entry.source,
    action: entry.action,
    decision: entry.decision,
    policy: entry.policyName,
    rule: entry.rule,
    reason: entry.reason,
    labels: [...(session?.labels ?? [])],
    agentLabels: [...(session?.agentLabels ?? [])],
    labelsAdded: [...(session?.labelsAdded ?? [])],
    reserved: details?.reserved ?? null,
    budget: details?.budget?.limit ?? null,
  };
}
