import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AdapterPrincipal } from '../api-keys/api-keys.service';
import { AuditWriter } from '../audit/audit-writer';
import { AppError } from '../common/app-error';
import { AppConfig } from '../config/app-config';
import { decisionSecondOf } from '../decisions/decision-id';
import { LinkedDecision, linkProblem } from '../decisions/decision-links';
import { AGENT_SOURCE, AgentSource } from '../decisions/decision-sources';
import { RecentDecisions } from '../decisions/recent-decisions';
import { outcomeRecord } from '../decisions/outcome-record';
import type { AdapterAuditDto } from './pdp.dto';

/** A decision this recent may still be queued for writing on another instance. */
const STORED_LOOKUP_WINDOW_MS = 60_000;

/**
 * `POST /v1/audit`: what became of a call an adapter checked, recorded in the same trail as the
 * decision (kind `outcome`, source `check`), linked to it by `decisionId`, which must name a
 * decision of the same agent and function that allowed it, if the outcome says allow. An `eventId` makes it
 * idempotent: an SDK replaying its write-ahead log after a crash records each event once. The
 * ledger row is written before the entry is queued, so a replay after the answer never doubles
 * it; the entry itself is written like every other (docs/architecture.md, "What a kill -9 can lose").
 */
@Injectable()
export class AdapterAuditService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly writer: AuditWriter,
    @Inject(AGENT_SOURCE) private readonly agents: AgentSource,
    private readonly recent: RecentDecisions,
    private readonly config: AppConfig,
  ) {}

  /** Records the outcome; false when its eventId was recorded before. */
  async record(adapter: AdapterPrincipal, event: AdapterAuditDto, traceId: string): Promise<boolean> {
    const agent = await this.agents.get(event.agentId);
    if (agent === null || agent.orgId !== adapter.orgId) throw AppError.notFound('agent', event.agentId);
    if (event.decisionId !== undefined) await this.checkLink(adapter.orgId, event.decisionId, event);
    const entry = outcomeRecord(agent, event, traceId);
    // Backpressure, as for decisions: while the queue is full (the database slow or down) the
    // outcome waits, and its eventId is not yet claimed, so a client that gives up may resend it.
    const backpressure = this.writer.whenWritable();
    if (backpressure !== undefined) await backpressure;
    if (event.eventId !== undefined && !(await this.claim(adapter.orgId, event.eventId, entry.id))) return false;
    this.writer.record(entry);
    return true;
  }

  /** Refuses (400) an outcome its decision does not stand behind (decision-links.ts). */
  private async checkLink(orgId: string, decisionId: string, event: AdapterAuditDto): Promise<void> {
    const decision = this.recent.get(decisionId) ?? (await this.storedDecision(orgId, decisionId));
    const problem = linkProblem(decisionId, orgId, decision, event);
    if (problem !== undefined) throw AppError.invalid(problem);
  }

  /**
   * A decision made elsewhere (another instance, before a restart), from the trail. Its entry
   * may still be queued on the instance that made it: one more look after a flush interval.
   */
  private async storedDecision(orgId: string, decisionId: string): Promise<LinkedDecision | null> {
    const second = decisionSecondOf(decisionId);
    if (second === undefined) return null;
    const found = await this.findDecision(orgId, decisionId, second);
    if (found !== null || Date.now() - second > STORED_LOOKUP_WINDOW_MS) return found;
    await new Promise((resolve) => setTimeout(resolve, this.config.audit.flushMs * 2));
    return this.findDecision(orgId, decisionId, second);
  }

  private async findDecision(orgId: string, decisionId: string, second: number): Promise<LinkedDecision | null> {
    const rows: Array<{ agent_id: string | null; decision: string; enforced: boolean; plugin: string | null; function: string | null }> = await this.dataSource.query(
      `SELECT agent_id, decision, enforced, input->>'plugin' AS plugin, input->>'function' AS function FROM audit_entries
        WHERE ts >= $1 AND ts < $2 AND id = $3 AND org_id = $4 AND kind = 'decision'`,
      [new Date(second), new Date(second + 1000), decisionId, orgId],
    );
    const row = rows[0];
    if (row === undefined) return null;
    return { orgId, agentId: row.agent_id ?? '', plugin: row.plugin ?? '', function: row.function ?? '', allowed: row.decision === 'allow' || !row.enforced };
  }

  private async claim(orgId: string, eventId: string, auditId: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(
      `INSERT INTO adapter_audit_events (org_id, event_id, audit_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING event_id`,
      [orgId, eventId, auditId],
    );
    return rows.length === 1;
  }
}
