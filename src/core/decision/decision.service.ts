import { Inject, Injectable, Optional } from '@nestjs/common';
import type { AuditRecord, AuditSource } from '../audit-record/audit-record';
import { AppError } from '../common/app-error';
import { errorBody } from '../common/error-body';
import { ErrorCode } from '../common/error-code';
import type { Principal, PrincipalDelegation } from './agent-authenticator';
import { scopeDenial } from './delegation-scope';
import type { CompiledPolicy } from '../policy-engine/compiled-policy';
import type { PolicySet } from '../policy-engine/policy-set';
import type { ApprovalRequirement, BudgetHold, Decision, DecisionInput, DelegationFacts, EvaluationEnv, Explanation, MatchTarget, RateLimiter, SessionFacts, ShadowDecision, ToolFacts } from '../policy-engine/types';
import { APPROVAL_DESK, ApprovalDesk, NO_APPROVALS, PendingApproval, Redemption } from './approval-ports';
import { approvalSubject } from './approval-binding';
import { DecisionEvents } from './decision-events';
import { decisionIdAt } from './decision-id';
import { decisionDetails, MemoryDetails } from './decision-details';
import { CanaryDetails, canaryDetails, cohortSet } from './canary-cohort';
import { DecisionMemory, Remembered } from './decision-memory';
import { outcomeOf, statusOf } from './verdict-answer';
import {
  AgentSnapshot,
  DECISION_LOG,
  DECISION_SETTINGS,
  DecisionLog,
  DecisionSettings,
  LoadedPolicies,
  POLICY_SOURCE,
  PolicySource,
  RATE_LIMITER,
  USAGE_GATE,
  UsageGate,
} from './decision-sources';

/** The entry point a decision came through, recorded as the audit entry's `source`. */
export type DecisionSource = Exclude<AuditSource, 'admin'>;

/** What an entry point asks, translated from its transport. */
export interface DecisionRequest {
  source: DecisionSource;
  traceId: string;
  action: string;
  resource: string;
  plugin: string;
  function: string;
  args: Readonly<Record<string, unknown>>;
  context: Readonly<Record<string, unknown>>;
  /**
   * The action the transport derived itself when the caller declared another one: the proxy's
   * `<verb>:<path>` beside X-Service-Action, a PDP request's `<plugin>.<function>` beside its
   * `action`. The request is decided on both, and denied if either is (docs/security.md).
   */
  derivedAction?: string;
  /** The MCP tool an MCP call names (`tool.*` in conditions). */
  tool?: ToolFacts;
  /**
   * The session the call belongs to (X-Service-Session, `session_id`, the MCP session), checked
   * by checkedSessionId; absent: the agent's own scope. The caller's claim: a session is only
   * ever the naming agent's own (docs/policies.md "Sessions").
   */
  sessionId?: string;
  /** The approval the caller presents for a request a `require_approval` rule holds (X-Service-Approval). */
  approvalId?: string;
  /**
   * What an approval binds of what the request carries, beside the rest of the decision input
   * (approval-binding.ts): the SHA-256 of it. Defaults to the hash of `args`; the proxy hashes
   * its method, path, query and body.
   */
  fingerprint?: () => Promise<string>;
  /** The HTTP method and path the audit entry shows, where the transport has them. */
  method?: string | null;
  path?: string | null;
  /**
   * The complete args once more of the request is read (the proxy's body); called only when an
   * applicable policy reads an argument other than `path` and `method`, with the names the
   * applicable policies read. May throw an AppError, which refuses the request before a
   * decision, or answer a Decision: a fixed denial of a body policies cannot read faithfully.
   */
  fullArgs?: (names: ReadonlySet<string>) => Promise<Readonly<Record<string, unknown>> | Decision>;
}

/** A decision made, not yet recorded. */
export interface Verdict {
  /** The decision id: the id its audit entry will have. */
  id: string;
  principal: Principal;
  request: DecisionRequest;
  input: DecisionInput;
  decision: Decision;
  /** False when MODE=audit lets a denial through. */
  enforced: boolean;
  policyVersion: number;
  /** False when a rate limit took part: the same input may be decided otherwise a moment later. */
  cacheable: boolean;
  /** Set when a `require_approval` rule holds the request: it waits for a person (answered 202). */
  pending?: PendingApproval;
  /** The approval an allowed request used, or the refused one a denied request presented. */
  approvalId?: string;
  /** The budget reservations a call let through holds, for its outcome to settle. */
  holds?: BudgetHold[];
  /** The session facts the decision read and the labels it added, where policies use sessions. */
  remembered?: Remembered;
  /** What the shadow policies that applied would have decided; recorded in the audit entry, never enforced. */
  shadow?: readonly ShadowDecision[];
  /** The rollout and cohort whose version of the rolled-out policy decided, when that policy applied. */
  canary?: CanaryDetails;
  nowMs: number;
  decisionMs: number;
}

/** What became of a decision, for its audit entry. */
export interface DecisionOutcome {
  /** Status the caller received. */
  status: number;
  /** Status the upstream answered, when the request was forwarded. */
  upstreamStatus?: number | null;
  /** Time of the whole request as the entry point saw it. */
  latencyMs: number;
  /** The upstream credential the forwarded request carried (its id: never its value). */
  credentialId?: string;
}

/**
 * The one governed decision (Cerbos's `Engine.Check`): every entry point (the proxy, the gRPC
 * and HTTP PDP, `/v1/check`, the edge sidecar; MCP tool calls when they come) translates its request into a
 * DecisionRequest and calls `decide` then `record`, or `check` for both at once. Here, and only
 * here: the monthly quota, backpressure from the audit log, the policy lookup, evaluation, the
 * audit entry and the per-decision event. Everything it reads and writes goes through the
 * interfaces of decision-sources.ts, so the sidecar runs it on a signed bundle.
 */
@Injectable()
export class DecisionService {
  constructor(
    @Inject(POLICY_SOURCE) private readonly policies: PolicySource,
    @Inject(USAGE_GATE) private readonly usage: UsageGate,
    @Inject(DECISION_LOG) private readonly log: DecisionLog,
    @Inject(RATE_LIMITER) readonly limiter: RateLimiter,
    @Inject(DECISION_SETTINGS) private readonly settings: DecisionSettings,
    private readonly events: DecisionEvents,
    readonly memory: DecisionMemory,
    @Optional() @Inject(APPROVAL_DESK) private readonly approvals: ApprovalDesk = NO_APPROVALS,
  ) {}

  /** True when denials are enforced; false in MODE=audit (they are only recorded). */
  get enforcing(): boolean {
    return this.settings.mode === 'enforce';
  }

  /** The organization's compiled policies. */
  policiesOf(orgId: string): Promise<LoadedPolicies> {
    return this.policies.get(orgId);
  }

  /** The policies an agent's decisions are made on: those in force, or a running rollout's canary set when the agent is in its cohort. */
  async policiesFor(agent: AgentSnapshot): Promise<PolicySet> {
    const policies = await this.policies.get(agent.orgId);
    return cohortSet(policies.set, policies.canary, agent.id).set;
  }

  /**
   * Decides, without recording: quota (429 quota_exceeded, not a decision), backpressure, the
   * applicable policies, the complete args if a policy reads them, evaluation. An evaluation
   * that fails (the rate-limit counters in Redis unavailable) refuses the request, and is
   * recorded here as a denial, since no verdict reaches the entry point (`recordFailure`).
   */
  async decide(principal: Principal, request: DecisionRequest, nowMs = Date.now()): Promise<Verdict> {
    const outOfScope = scopeDenial(principal.delegation.scope, request);
    if (outOfScope !== undefined) return this.fixedVerdict(principal, request, outOfScope, nowMs, 0);
    const orgId = principal.agent.orgId;
    if (!(await this.usage.tryConsume(orgId, nowMs))) throw this.quotaExceeded(principal, request, nowMs);
    const backpressure = this.log.whenWritable();
    if (backpressure !== undefined) await backpressure;
    const policies = await this.policies.get(orgId);
    // One agent decides on one version of a rolled-out policy, whichever question is asked (docs/policies.md "Canary rollouts").
    const { set, cohort } = cohortSet(policies.set, policies.canary, principal.agent.id);
    const questions = questionsOf(principal, request);
    const applicable = questions.map((question) => set.applicable(question.target));
    const args = await this.argsFor(request, set, applicable);
    if (!isArgs(args)) return this.fixedVerdict(principal, request, args, nowMs, policies.version);
    const org = this.usage.orgFacts?.(orgId);
    const started = performance.now();
    const recalled = this.memory.recall(set, principal, request.sessionId, nowMs);
    const session = recalled instanceof Promise ? await this.recalledOrRecorded(recalled, principal, request, args, org, nowMs, started) : recalled;
    const env = this.envFor(set, questions.length, nowMs);
    let input = inputOf(principal.agent, principal.delegation, request, args, org, session);
    const asked = input;
    let decision: Decision;
    const approvalHolds: Decision[] = [];
    try {
      decision = await set.evaluate(input, env, applicable[0]);
      if (decision.approval !== undefined) approvalHolds.push(...(decision.approvalHolds ?? [decision]));
      // Every question is asked until one is denied: a hold on one never hides a deny on another.
      for (let i = 1; i < questions.length && !isDenial(decision); i++) {
        const other = inputOf(questions[i].agent, principal.delegation, { ...request, action: questions[i].target.action }, args, org, session);
        const decided = await set.evaluate(other, env, applicable[i]);
        if (decided.effect === 'allow') continue;
        if (decided.approval !== undefined) approvalHolds.push(...(decided.approvalHolds ?? [decided]));
        if (isDenial(decided) || decision.effect === 'allow') [input, decision] = [other, decided];
      }
    } catch (error) {
      this.memory.afterDecision(set, principal, request.sessionId, { action: request.action, letThrough: false, labels: undefined, holds: env.holds, facts: undefined }, nowMs);
      this.recordFailure(principal, request, input, nowMs, performance.now() - started, error);
      throw error;
    }
    const verdict: Verdict = {
      id: decisionIdAt(nowMs),
      principal,
      request,
      input,
      decision,
      enforced: decision.effect === 'allow' || this.enforcing,
      policyVersion: policies.version,
      // A cached answer is never seen here: not after a rate limit or a session took part, nor after an alert rule fired (each firing is to be alerted).
      cacheable: decision.alerts === undefined && !applicable.some((list) => list.some((policy) => policy.usesRateLimit || policy.usesSession)),
      nowMs,
      decisionMs: performance.now() - started,
    };
    if (set.shadowPolicies.length > 0) verdict.shadow = await this.shadowOf(set, asked, nowMs);
    const canary = canaryDetails(policies.set, policies.canary, cohort, asked);
    if (canary !== undefined) verdict.canary = canary;
    const decided = decision.approval !== undefined && this.enforcing ? await this.approvalVerdict(verdict, decision.approval, approvalHolds) : verdict;
    try {
      return await this.remember(set, decided, env.holds, session);
    } catch (error) {
      // A session that cannot be remembered (Redis away) would let the call shed its labels: it is refused, and gives back what it reserved.
      this.memory.releaseHolds(env.holds, nowMs);
      this.recordFailure(principal, request, input, nowMs, performance.now() - started, error);
      throw error;
    }
  }

  /** Session facts from a shared memory (Redis): one it cannot answer refuses the request, recorded as a denial like any failed decision. */
  private async recalledOrRecorded(recalled: Promise<SessionFacts>, principal: Principal, request: DecisionRequest, args: DecisionInput['args'], org: DecisionInput['org'], nowMs: number, started: number): Promise<SessionFacts> {
    try {
      return await recalled;
    } catch (error) {
      this.recordFailure(principal, request, inputOf(principal.agent, principal.delegation, request, args, org), nowMs, performance.now() - started, error);
      throw error;
    }
  }

  /** The evaluation environment: the rate limiter and the budget ledger, once per request whatever the questions. */
  private envFor(set: PolicySet, questions: number, nowMs: number): EvaluationEnv {
    // Several questions share one counting of each rate-limit counter (onceLimiter) and one reservation of each budget.
    const env: EvaluationEnv = questions === 1 ? this.env(nowMs) : { limiter: onceLimiter(this.limiter), nowMs };
    env.budgets = this.memory.ledgerFor(questions);
    if (set.usesBudget) env.holds = [];
    return env;
  }

  /** What the call leaves in its session once decided (docs/policies.md "Sessions"), and the holds it keeps. */
  private remember(set: PolicySet, verdict: Verdict, holds: BudgetHold[] | undefined, session: SessionFacts | undefined): Verdict | Promise<Verdict> {
    const letThrough = verdict.pending === undefined && (verdict.decision.effect === 'allow' || !verdict.enforced);
    const call = { action: verdict.request.action, letThrough, labels: verdict.decision.labels, holds, facts: session };
    const after = this.memory.afterDecision(set, verdict.principal, verdict.request.sessionId, call, verdict.nowMs);
    // In process the memory answers at once; in Redis it is awaited.
    return after instanceof Promise ? after.then((remembered) => this.withRemembered(verdict, remembered, holds)) : this.withRemembered(verdict, after, holds);
  }

  private withRemembered(verdict: Verdict, remembered: Remembered | undefined, holds: BudgetHold[] | undefined): Verdict {
    if (remembered !== undefined) {
      verdict.remembered = remembered;
      // The recorded input carries the session's facts as this call read them, not as its own labels and action left them (backtests replay it).
      verdict.input = { ...verdict.input, session: remembered.facts };
    }
    if (holds !== undefined && holds.length > 0) verdict.holds = holds;
    return verdict;
  }

  /**
   * A request only `require_approval` rules hold (docs/approvals.md): with an approval id, the
   * approved approval of this very request (approval-binding.ts: the whole decision input, and
   * the same holds) lets it through, once, and anything else denies it, saying why; without one,
   * a pending approval is opened and the request waits for a person (answered 202). Never
   * cacheable.
   */
  private async approvalVerdict(verdict: Verdict, approval: ApprovalRequirement, holds: readonly Decision[]): Promise<Verdict> {
    const { principal, request, decision } = verdict;
    const subject = await approvalSubject(principal, request, holds);
    if (request.approvalId === undefined) {
      const pending = await this.approvals.open(subject, { ...decision, approval }).catch((error: unknown) => deskFailure(error));
      if ('denial' in pending) return { ...verdict, decision: { ...pending.denial, policy: decision.policy, rule: decision.rule }, cacheable: false };
      return { ...verdict, cacheable: false, pending, approvalId: pending.approvalId };
    }
    const redemption = await this.approvals.redeem(request.approvalId, subject).catch((error: unknown): Redemption => ({ granted: false, reason: `cannot be checked: ${(error as Error).message}` }));
    const reason = redemption.granted ? `Approved by ${redemption.decidedBy} (${request.approvalId})` : `Approval ${request.approvalId} ${redemption.reason}`;
    const decided: Decision = { effect: redemption.granted ? 'allow' : 'deny', policy: decision.policy, rule: decision.rule, reason };
    return { ...verdict, decision: decided, enforced: true, cacheable: false, approvalId: request.approvalId };
  }


  /**
   * What the shadow policies would have decided on the acting agent's request (docs/policies.md
   * "Shadow policies"): recorded, never enforced. Their evaluation failing (rate-limit counters
   * unavailable) costs the decision nothing: no shadow result is recorded then.
   */
  private async shadowOf(set: PolicySet, input: DecisionInput, nowMs: number): Promise<readonly ShadowDecision[] | undefined> {
    try {
      const decided = await set.shadowDecisions(input, this.env(nowMs));
      return decided.length > 0 ? decided : undefined;
    } catch {
      return undefined;
    }
  }

  /** The request's args, completed by `fullArgs` when an applicable policy reads the body. */
  private async argsFor(request: DecisionRequest, set: PolicySet, applicable: readonly CompiledPolicy[][]): Promise<DecisionInput['args'] | Decision> {
    if (request.fullArgs === undefined || !applicable.some((list) => set.readsBodyArgs(list))) return request.args;
    const names = new Set<string>();
    for (const list of applicable) for (const policy of list) for (const name of policy.argNames) names.add(name);
    return request.fullArgs(names);
  }

  /**
   * The audit entry of a request refused because its policies could not be evaluated: a denial
   * with the status and message the caller gets (503 and why, for unavailable rate-limit
   * counters), no policy named. Not a DecisionEvent: alerting hears of the failure through
   * RequestFailures, as of any 5xx before a decision.
   */
  private recordFailure(principal: Principal, request: DecisionRequest, input: DecisionInput, nowMs: number, decisionMs: number, error: unknown): void {
    const { agent } = principal;
    const answer = errorBody(error);
    this.log.record({
      ts: nowMs,
      orgId: agent.orgId,
      source: request.source,
      kind: 'decision',
      traceId: request.traceId,
      agentId: agent.id,
      agentName: agent.name,
      trustTier: agent.trustTier,
      action: request.action,
      method: request.method ?? null,
      path: request.path ?? null,
      decision: 'deny',
      enforced: true,
      rateLimited: false,
      policyName: null,
      rule: null,
      reason: String(answer.body.message),
      decisionLatencyMs: decisionMs,
      latencyMs: null,
      status: answer.status,
      upstreamStatus: null,
      delegationChain: principal.delegation.chain.length > 0 ? principal.delegation.chain : null,
      input,
      details: null,
    });
  }

  /** The 429 of an organization out of monthly policy checks, told to the quota refusal listeners (alerting) first. */
  private quotaExceeded(principal: Principal, request: DecisionRequest, nowMs: number): AppError {
    const reason = 'The organization has used its monthly policy checks';
    const { agent } = principal;
    this.events.quotaRefused({
      ts: nowMs,
      orgId: agent.orgId,
      traceId: request.traceId,
      agentId: agent.id,
      agentName: agent.name,
      trustTier: agent.trustTier,
      action: request.action,
      method: request.method ?? null,
      path: request.path ?? null,
      reason,
    });
    return new AppError(ErrorCode.QuotaExceeded, reason);
  }

  /**
   * A denial fixed by the request itself, not by a policy rule: outside its delegated token's
   * scope (denied by the token alone, so offline too, before quota and policy: policy version
   * 0), or a body policies cannot read faithfully. The same input is always denied: cacheable.
   */
  /** The input a request is decided on for its acting agent, without reading more of it (a body): for what a caller may never do. */
  inputFor(principal: Principal, request: DecisionRequest): DecisionInput {
    return inputOf(principal.agent, principal.delegation, request, request.args, this.usage.orgFacts?.(principal.agent.orgId));
  }

  /**
   * A denial the transport fixed from the request itself, not from policy (an MCP tool held by
   * its pin): a verdict like any other, to record with `record`. It takes no quota.
   */
  refuse(principal: Principal, request: DecisionRequest, decision: Decision, nowMs = Date.now()): Verdict {
    return this.fixedVerdict(principal, request, decision, nowMs, 0);
  }

  private fixedVerdict(principal: Principal, request: DecisionRequest, decision: Decision, nowMs: number, policyVersion: number): Verdict {
    const input = inputOf(principal.agent, principal.delegation, request, request.args, undefined);
    return { id: decisionIdAt(nowMs), principal, request, input, decision, enforced: this.enforcing, policyVersion, cacheable: true, nowMs, decisionMs: 0 };
  }

  /** Records the decision's audit entry and emits its event; never blocks. */
  record(verdict: Verdict, outcome: DecisionOutcome): void {
    const { principal, request, decision } = verdict;
    const entry: AuditRecord & { id: string } = {
      id: verdict.id,
      ts: verdict.nowMs,
      orgId: principal.agent.orgId,
      source: request.source,
      kind: 'decision',
      traceId: request.traceId,
      agentId: principal.agent.id,
      agentName: principal.agent.name,
      trustTier: principal.agent.trustTier,
      action: request.action,
      method: request.method ?? null,
      path: request.path ?? null,
      decision: decision.effect,
      enforced: verdict.enforced,
      rateLimited: decision.rateLimit !== undefined,
      policyName: decision.policy,
      rule: decision.rule,
      reason: decision.reason,
      decisionLatencyMs: verdict.decisionMs,
      latencyMs: outcome.latencyMs,
      status: outcome.status,
      upstreamStatus: outcome.upstreamStatus ?? null,
      delegationChain: principal.delegation.chain.length > 0 ? principal.delegation.chain : null,
      input: verdict.input,
      details: decisionDetails(decision, request.derivedAction !== request.action ? request.derivedAction : undefined, verdict.approvalId, verdict.shadow, memoryDetails(verdict), outcome.credentialId, verdict.canary),
    };
    if (verdict.holds !== undefined) this.memory.afterOutcome(verdict.id, principal, verdict.holds, outcome, verdict.nowMs);
    this.log.record(entry);
    this.events.emit({ entry, decision });
  }

  /**
   * Decides and records at once, for entry points that answer with the decision itself (PDP,
   * `/v1/check`, the sidecar). The entry's status is the one the proxy would answer (a denial
   * 403, though these answer it 200 with `deny`), so every entry point's entries read alike.
   */
  async check(principal: Principal, request: DecisionRequest, nowMs = Date.now()): Promise<Verdict> {
    const started = performance.now();
    const verdict = await this.decide(principal, request, nowMs);
    this.record(verdict, { status: statusOf(outcomeOf(verdict), 'refusing'), latencyMs: performance.now() - started });
    return verdict;
  }

  /** Dry run with the trace of every rule tried; rate limits are peeked, not counted. */
  explain(policies: LoadedPolicies, input: DecisionInput, nowMs = Date.now()): Explanation | Promise<Explanation> {
    return policies.set.explain(input, this.env(nowMs));
  }

  private env(nowMs: number): EvaluationEnv {
    return { limiter: this.limiter, nowMs, budgets: this.memory.budgets };
  }
}

/** One evaluation a request needs: for an agent of its chain, on one of its actions. */
interface Question {
  agent: AgentSnapshot;
  target: MatchTarget;
}

/**
 * What a request is decided on: the acting agent on its action first, then each other action
 * the request stands for and each agent it acts for (a delegated token carries no more rights
 * than any agent of its chain). It is allowed only if every question is; any deny wins over any
 * `require_approval` hold, which an approval may lift only as a whole (docs/security.md).
 */
function questionsOf(principal: Principal, request: DecisionRequest): Question[] {
  const actions = request.derivedAction !== undefined && request.derivedAction !== request.action ? [request.action, request.derivedAction] : [request.action];
  const agents = [principal.agent, ...(principal.delegation.delegators ?? [])];
  const questions: Question[] = [];
  for (const agent of agents) for (const action of actions) questions.push({ agent, target: { plugin: request.plugin, function: request.function, action } });
  return questions;
}

/** What the policies read: the agent's current facts and delegation, the request, the organization's plan and usage. */
function inputOf(agent: AgentSnapshot, delegation: PrincipalDelegation, request: DecisionRequest, args: DecisionInput['args'], org: DecisionInput['org'], session?: SessionFacts): DecisionInput {
  const { action, resource, plugin, context, tool } = request;
  // Only what policies may read: not the scope, not the delegators' records.
  const facts: DelegationFacts = delegation.depth === 1 && delegation.scope === undefined ? delegation : { depth: delegation.depth, chain: delegation.chain };
  const input: DecisionInput = { agent: agent.facts, action, resource, plugin, function: request.function, args, context, delegation: facts, org };
  if (tool !== undefined) input.tool = tool;
  if (session !== undefined) input.session = session;
  return input;
}

/** The session an audit entry names, the labels the decision read and added, and what it reserved. */
function memoryDetails(verdict: Verdict): MemoryDetails | undefined {
  const { remembered, holds } = verdict;
  if (remembered === undefined && holds === undefined) return undefined;
  return {
    ...(remembered === undefined ? {} : { session: { id: remembered.facts.id, labels: remembered.facts.labels, agentLabels: remembered.facts.agent_labels, ...(remembered.added.length > 0 ? { labelsAdded: remembered.added } : {}) } }),
    ...(holds === undefined ? {} : { reserved: holds.reduce((sum, hold) => sum + hold.cost, 0) }),
  };
}

/** A deny no approval can lift. */
function isDenial(decision: Decision): boolean {
  return decision.effect === 'deny' && decision.approval === undefined;
}

function isArgs(value: DecisionInput['args'] | Decision): value is DecisionInput['args'] {
  return !('effect' in value && 'policy' in value && 'reason' in value && typeof (value as Decision).effect === 'string');
}

/**
 * A limiter that counts each counter once however many evaluations of one request reach it
 * (the same `global` rule met on the declared and the derived action), answering later calls
 * with the first one's result.
 */
function onceLimiter(limiter: RateLimiter): RateLimiter {
  const seen = new Map<string, number | Promise<number>>();
  return {
    hit: (key, limit, windowMs, nowMs) => {
      const known = seen.get(key);
      if (known !== undefined) return known;
      const answer = limiter.hit(key, limit, windowMs, nowMs);
      seen.set(key, answer);
      return answer;
    },
    peek: (key, limit, windowMs, nowMs) => limiter.peek(key, limit, windowMs, nowMs),
  };
}

/** A desk that cannot open an approval (a sidecar without its gateway): the request is denied, saying why. */
function deskFailure(error: unknown): { denial: Decision } {
  const why = error instanceof AppError ? error.message : `Approval needed, but it cannot be requested: ${(error as Error).message}`;
  return { denial: { effect: 'deny', policy: '', rule: null, reason: why } };
}
