import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AdapterPrincipal } from '../api-keys/api-keys.service';
import { AuditWriter } from '../audit/audit-writer';
import { AppError } from '../common/app-error';
import { AGENT_SOURCE, AgentSource } from '../decisions/decision-sources';
import { outcomeRecord } from './outcome-record';
import type { AdapterAuditDto } from './pdp.dto';

/**
 * `POST /v1/audit`: what became of a call an adapter checked, recorded in the same trail as the
 * decision (kind `outcome`, source `check`), linked to it by `decisionId`. An `eventId` makes it
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
  ) {}

  /** Records the outcome; false when its eventId was recorded before. */
  async record(adapter: AdapterPrincipal, event: AdapterAuditDto, traceId: string): Promise<boolean> {
    const agent = await this.agents.get(event.agentId);
    if (agent === null || agent.orgId !== adapter.orgId) throw AppError.notFound('agent', event.agentId);
    const entry = outcomeRecord(agent, event, traceId);
    // Backpressure, as for decisions: while the queue is full (the database slow or down) the
    // outcome waits, and its eventId is not yet claimed, so a client that gives up may resend it.
    const backpressure = this.writer.whenWritable();
    if (backpressure !== undefined) await backpressure;
    if (event.eventId !== undefined && !(await this.claim(adapter.orgId, event.eventId, entry.id))) return false;
    this.writer.record(entry);
    return true;
  }

  private async claim(orgId: string, eventId: string, auditId: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(
      `INSERT INTO adapter_audit_events (org_id, event_id, audit_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING event_id`,
      [orgId, eventId, auditId],
    );
    return rows.length === 1;
  }
}
