import { Inject, Injectable } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { validationFailure } from '../common/validation';
import { linkProblem } from '../decisions/decision-links';
import { AGENT_SOURCE, AgentSource, DECISION_LOG, DecisionLog } from '../decisions/decision-sources';
import { outcomeRecord } from '../decisions/outcome-record';
import { RecentDecisions } from '../decisions/recent-decisions';
import { DecisionMemory } from '../decisions/decision-memory';
import { OUTCOME_LEDGER, OutcomeLedger } from '../decisions/adapter-ports';
import { AdapterAuditDto } from './pdp.dto';

/** What `POST /v1/audit` answers. */
export interface OutcomeAnswer {
  accepted: true;
  /** False when the eventId was recorded before: a replay, recorded once. */
  recorded: boolean;
}

/**
 * `POST /v1/audit`, on the gateway and at the edge alike: what became of a call an adapter
 * checked, recorded in the same trail as the decision (kind `outcome`, source `check`), linked
 * to it by `decisionId`, which must name a decision of the same agent and function that allowed
 * it, if the outcome says allow (docs/security.md). An `eventId` makes it idempotent: the ledger
 * claims it before the entry is queued, so a replay after the answer never doubles it.
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

  async record(orgId: string, body: unknown, traceId: string): Promise<OutcomeAnswer> {
    const event = outcomeOf(body);
    const agent = await this.agents.get(event.agentId);
    if (agent === null || agent.orgId !== orgId) throw AppError.notFound('agent', event.agentId);
    if (event.decisionId !== undefined) await this.checkLink(orgId, event.decisionId, event);
    if ((event.cost !== undefined || event.failed === true) && event.decisionId === undefined) throw AppError.invalid('cost and failed settle a decision\'s budget reservations: name it with decisionId');
    const entry = outcomeRecord(agent, event, traceId);
    // Backpressure, as for decisions: while the log is full the outcome waits, and its eventId is
    // not yet claimed, so a client that gives up may resend it.
    const backpressure = this.log.whenWritable();
    if (backpressure !== undefined) await backpressure;
    if (event.eventId !== undefined && !(await this.ledger.claim(orgId, event.eventId, entry.id))) return { accepted: true, recorded: false };
    this.log.record(entry);
    if (event.decisionId !== undefined && (event.cost !== undefined || event.failed === true)) {
      await this.memory.settle(orgId, agent.id, event.decisionId, event.failed === true ? 'failed' : event.cost!, Date.now());
    }
    return { accepted: true, recorded: true };
  }

  private async checkLink(orgId: string, decisionId: string, event: AdapterAuditDto): Promise<void> {
    const decision = this.recent.get(decisionId) ?? (await this.ledger.findDecision(orgId, decisionId));
    const problem = linkProblem(decisionId, orgId, decision, event);
    if (problem !== undefined) throw AppError.invalid(problem);
  }
}

/**
 * The body as an AdapterAuditDto, checked as the gateway's ValidationPipe checks (the same
 * messages on every transport). `arguments` is validated as an object and then kept as sent:
 * class-transformer would drop (or trip over) `__proto__`, `constructor` and `prototype` keys,
 * which would let a caller keep an argument out of the trail.
 */
function outcomeOf(body: unknown): AdapterAuditDto {
  if (typeof body !== 'object' || body === null) throw new AppError(ErrorCode.InvalidJson, 'Request body is not valid JSON');
  if (Array.isArray(body)) throw AppError.invalid('body must be a JSON object');
  const sent = (body as { arguments?: unknown }).arguments;
  const checkable = isPlainObject(sent) ? { ...body, arguments: {} } : body;
  const event = plainToInstance(AdapterAuditDto, checkable);
  const problems = validateSync(event, { whitelist: true, forbidNonWhitelisted: true });
  if (problems.length > 0) throw validationFailure(problems);
  return isPlainObject(sent) ? Object.assign(event, { arguments: sent }) : event;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
