import { Inject, Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { linkProblem, LinkedDecision } from '../decision/decision-links';
import { AGENT_SOURCE, AgentSnapshot, AgentSource, DECISION_LOG, DecisionLog } from '../decision/decision-sources';
import { cachedDecisionRecord, outcomeRecord } from './outcome-record';
import { RecentDecisions } from '../decision/recent-decisions';
import { DecisionMemory } from '../decision/decision-memory';
import { OUTCOME_LEDGER, OutcomeLedger } from '../decision/adapter-ports';
import type { AuditRecord } from '../audit-record/audit-record';
import { UNLIMITED } from '../config/plans';
import { auditBodyOf, PlacedEvent } from './audit-events';

/** What `POST /v1/audit` answers to one event. */
export interface OutcomeAnswer {
  accepted: true;
  /** False when the eventId was recorded before: a replay, recorded once. */
  recorded: boolean;
}

/** What `POST /v1/audit` answers to a batch. */
export interface BatchAnswer {
  /** Events newly recorded. */
  accepted: number;
  /** Events whose eventId was recorded before (a retried batch). */
  duplicates: number;
}

/** How far ahead of the gateway's clock an `occurredAt` may be: clock skew, not a time to come. */
const MAX_AHEAD_MS = 5 * 60_000;
const DAY_MS = 86_400_000;

interface EventEntry {
  eventId?: string;
  record: AuditRecord & { id: string };
}

/**
 * `POST /v1/audit`, on the gateway and at the edge alike: what became of a call an adapter
 * checked, recorded in the same trail as the decision (kind `outcome`, source `check`), linked
 * to it by `decisionId`, which must name a decision of the same agent and function that allowed
 * it, if the outcome says allow (docs/security.md). An event with `cached: true` is a decision
 * the SDK applied from its cache: a decision entry of its own, naming the decision it reused, so
 * a cached denial is on the trail too. An `eventId` makes an event idempotent: the ledger claims
 * it before the entry is queued, so a replay after the answer never doubles it. A batch is
 * checked whole before anything is recorded (docs/pdp.md "Batches").
 */
@Injectable()
export class OutcomeRecorder {
  constructor(
    @Inject(AGENT_SOURCE) private readonly agents: AgentSource,
    @Inject(DECISION_LOG) private readonly log: DecisionLog,
    @Inject(OUTCOME_LEDGER) private readonly ledger: OutcomeLedger,
    private readonly recent: RecentDecisions,
    private readonly memory: DecisionMemory,
  ) {}

  async record(orgId: string, body: unknown, traceId: string): Promise<OutcomeAnswer | BatchAnswer> {
    const { batch, events } = auditBodyOf(body);
    const entries = await this.entriesOf(orgId, events, traceId, batch);
    // Backpressure, as for decisions: while the log is full the events wait, and their eventIds
    // are not yet claimed, so a client that gives up may resend them.
    const backpressure = this.log.whenWritable();
    if (backpressure !== undefined) await backpressure;
    const claims = entries.flatMap(({ eventId, record }) => (eventId === undefined ? [] : [{ eventId, auditId: record.id }]));
    const claimed = claims.length === 0 ? new Set<string>() : await this.ledger.claim(orgId, claims);
    let accepted = 0;
    for (const { eventId, record } of entries) {
      if (eventId !== undefined && !claimed.delete(eventId)) continue;
      this.log.record(record);
      accepted++;
    }
    await this.settle(orgId, events);
    if (!batch) return { accepted: true, recorded: accepted === 1 };
    return { accepted, duplicates: entries.length - accepted };
  }

  /** Every event's audit entry, or a 400 naming every problem of every event (nothing is recorded then). */
  private async entriesOf(orgId: string, events: PlacedEvent[], traceId: string, batch: boolean): Promise<EventEntry[]> {
    const nowMs = Date.now();
    const agents = new Map<string, Promise<AgentSnapshot | null>>();
    const decisions = new Map<string, Promise<LinkedDecision | null>>();
    const retention = events.some(({ event }) => event.occurredAt !== undefined) ? await this.ledger.auditRetentionDays(orgId) : UNLIMITED;
    const problems: string[] = [];
    const entries = await Promise.all(
      events.map(async ({ event, field }): Promise<EventEntry | undefined> => {
        if (!agents.has(event.agentId)) agents.set(event.agentId, this.agents.get(event.agentId));
        const agent = await agents.get(event.agentId)!;
        if (agent === null || agent.orgId !== orgId) {
          if (!batch) throw AppError.notFound('agent', event.agentId);
          problems.push(`${field}agentId ${event.agentId} names no agent of this organization`);
          return undefined;
        }
        const ts = event.occurredAt === undefined ? nowMs : Date.parse(event.occurredAt);
        const timeProblem = occurredAtProblem(ts, nowMs, retention);
        if (timeProblem !== undefined) problems.push(`${field}occurredAt ${timeProblem}`);
        if ((event.cost !== undefined || event.failed === true) && event.decisionId === undefined) problems.push(`${field}decisionId is required with cost or failed: it names the decision whose budget reservations they settle`);
        if (event.cached === true && event.decisionId === undefined) problems.push(`${field}decisionId is required when cached is true: it names the decision the cache reused`);
        if (event.decisionId === undefined) return { eventId: event.eventId, record: outcomeRecord(agent, event, traceId, ts) };
        const decisionId = event.decisionId;
        if (!decisions.has(decisionId)) decisions.set(decisionId, this.findDecision(orgId, decisionId));
        const linked = await decisions.get(decisionId)!;
        const problem = linkProblem(decisionId, orgId, linked, event);
        if (problem !== undefined || linked === null) {
          problems.push(`${field}${problem}`);
          return undefined;
        }
        const record = event.cached === true ? cachedDecisionRecord(agent, event, linked, traceId, ts) : outcomeRecord(agent, event, traceId, ts);
        return { eventId: event.eventId, record };
      }),
    );
    if (problems.length > 0) throw AppError.invalid(problems.join('; '));
    return entries.filter((entry) => entry !== undefined);
  }

  /** The budget reservations the events' decisions hold, settled with the cost each reports, or given back by `failed` (docs/policies.md "Budgets"). */
  private async settle(orgId: string, events: PlacedEvent[]): Promise<void> {
    const nowMs = Date.now();
    for (const { event } of events) {
      if (event.decisionId === undefined || (event.cost === undefined && event.failed !== true)) continue;
      await this.memory.settle(orgId, event.agentId, event.decisionId, event.failed === true ? 'failed' : event.cost!, nowMs);
    }
  }

  private async findDecision(orgId: string, decisionId: string): Promise<LinkedDecision | null> {
    return this.recent.get(decisionId) ?? (await this.ledger.findDecision(orgId, decisionId));
  }
}

/** Why an event's time cannot be recorded, else undefined. */
function occurredAtProblem(ts: number, nowMs: number, retentionDays: number): string | undefined {
  if (ts > nowMs + MAX_AHEAD_MS) return 'is more than 5 minutes ahead of the gateway’s clock';
  if (retentionDays !== UNLIMITED && ts < nowMs - retentionDays * DAY_MS) return `is older than the organization’s audit retention (${retentionDays} days)`;
  return undefined;
}
