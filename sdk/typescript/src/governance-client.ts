import { performance } from 'node:perf_hooks';
import fs from 'node:fs';
import { AuditBatcher } from './audit-batcher';
import type { AuditRecord } from './audit-event';
import { claimOrphans, processAuditFile } from './audit-files';
import { DecisionCache } from './decision-cache';
import { ApprovalPendingError, GatewayRejectedError, GatewayTimeoutError, GatewayUnavailableError, PolicyDeniedError } from './errors';
import { GrpcTransport } from './grpc-transport';
import { HttpTransport } from './http-transport';
import { raisedSummary, summaryOf } from './result-summary';
import { currentSession } from './session';
import { CallOptions, callOptions, GovernanceOptions, MAX_APPROVAL_WAIT_SECONDS, ResolvedOptions, resolveOptions } from './options';
import type { ApprovalStatus, CheckRequest, CheckResult, GatewayDecision, Transport } from './transport';
import { WriteAheadLog } from './write-ahead-log';

/** guard()'s answer when a policy denied the call and throwOnDenied is false: the call did not run. */
export class SoftDenial {
  constructor(readonly result: CheckResult) {}
}

/** What check() may present besides the call. */
export interface CheckOptions {
  /** The approval of an earlier pending answer for this identical call, once waitForApproval() says `approved`. */
  approvalId?: string;
}

/** The first pause between two asks of an approval's status, doubled after each up to the second. */
const FIRST_APPROVAL_POLL_MS = 250;
const MAX_APPROVAL_POLL_MS = 5000;

/** After a Subscribe stream fails, wait this long before opening another. */
const RESUBSCRIBE_AFTER_MS = 1000;
/** The longest error text a failure-mode reason quotes. */
const MAX_REASON = 200;
/** The longest resultSummary and durationMs POST /v1/audit takes. */
const MAX_AUDIT_SUMMARY = 2048;
const MAX_AUDIT_DURATION_MS = 86_400_000;

/**
 * The agent-side adapter: asks the gateway's PDP before a tool call (check), records what the
 * call did afterwards (audit), or both around a call (guard). gRPC by default, HTTP when gRPC
 * cannot connect; decisions cached until their TTL or a Subscribe event; audit events batched
 * behind a write-ahead file. Create with GovernanceClient.create(), end with close().
 */
export class GovernanceClient {
  /** The transport asked last: what `via` names. */
  private transport: Transport;
  /** Until when checks go over HTTP because gRPC could not connect (ms since the epoch). */
  private grpcDownUntil = 0;
  private readonly cache = new DecisionCache();
  private stopSubscription: (() => void) | null = null;
  private resubscribeAt = 0;
  private closed = false;

  private constructor(
    private readonly options: ResolvedOptions,
    private readonly grpc: GrpcTransport,
    private readonly http: HttpTransport,
    private readonly audits: AuditBatcher,
  ) {
    this.transport = grpc;
  }

  /** A client with `options`; resends the audit events a previous process left unacknowledged. */
  static async create(options: GovernanceOptions): Promise<GovernanceClient> {
    const resolved = resolveOptions(options);
    const http = new HttpTransport(resolved.gatewayUrl, resolved.apiKey);
    const { log, unacknowledged } = await openAuditLog(resolved);
    const audits = new AuditBatcher({
      log,
      unacknowledged,
      batchSize: resolved.auditBatchSize,
      flushMs: resolved.auditFlushMs,
      durability: resolved.auditDurability,
      send: (events) => http.sendAudit(events, resolved.timeoutSeconds * 1000),
      removeFileWhenEmpty: resolved.auditLogPath === null,
    });
    const grpc = new GrpcTransport(resolved.grpcAddress, resolved.apiKey, resolved.gatewayUrl.startsWith('https:'));
    return new GovernanceClient(resolved, grpc, http, audits);
  }

  /**
   * Asks whether the agent may call `plugin.fn` with `args`; a denial throws PolicyDeniedError
   * unless throwOnDenied is false. An answer the client made itself (no answer came) leaves an
   * audit event saying so; a timeout under fail-closed throws GatewayTimeoutError, or with
   * throwOnDenied false answers a denial (`via: 'timeout'`).
   * A call a `require_approval` rule holds answers `decision: 'pending'` with `approvalId` and
   * `approvalExpiresAt` (thrown as ApprovalPendingError when throwOnDenied): wait for it with
   * waitForApproval(), then ask again with `{ approvalId }` for the identical call, which the
   * approval lets through once (docs/approvals.md). guard() does all of that itself.
   */
  async check(plugin: string, fn: string, args: Record<string, unknown> = {}, context: Record<string, unknown> = {}, options: CheckOptions = {}): Promise<CheckResult> {
    const call = callOptions(this.options, plugin);
    const result = await this.decide(plugin, fn, args, context, call, options.approvalId);
    if (withoutAnswer(result) && result.allowed) await this.audit({ plugin, function: fn, decision: 'allow', durationMs: 0, resultSummary: result.reason });
    return settle(result, call);
  }

  /**
   * Waits, at most `waitSeconds` (default approvalWaitSeconds), for a person to decide the approval
   * a pending check opened, asking GET /v1/approvals/:id with a growing pause between asks (0.25 s
   * doubling to 5 s). Resolves with its status: `approved` (retry the identical call with it),
   * `rejected`, `expired`, `used`, or `pending` when the wait ended first. Asking spends nothing:
   * only the retry uses the approval. Throws GatewayRejectedError when the gateway refuses to say
   * (an approval unknown in the key's organization).
   */
  async waitForApproval(approvalId: string, waitSeconds = this.options.approvalWaitSeconds): Promise<ApprovalStatus> {
    const deadline = performance.now() + Math.min(Math.max(waitSeconds, 0), MAX_APPROVAL_WAIT_SECONDS) * 1000;
    let pause = FIRST_APPROVAL_POLL_MS;
    for (;;) {
      const status = await this.http.approvalStatus(approvalId, this.options.timeoutSeconds * 1000).catch((error: unknown) => {
        // An outage while waiting is waited out like a pending answer: the deadline still bounds it.
        if (error instanceof GatewayUnavailableError || error instanceof GatewayTimeoutError) return 'pending' as const;
        throw error;
      });
      const left = deadline - performance.now();
      if (status !== 'pending' || left <= 0 || this.closed) return status;
      await sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, MAX_APPROVAL_POLL_MS);
    }
  }

  /** A decision for the call, the failure mode's answer when none came; not yet settled by throwOnDenied. */
  private async decide(plugin: string, fn: string, args: Record<string, unknown>, context: Record<string, unknown>, call: CallOptions, approvalId?: string): Promise<CheckResult> {
    const request: CheckRequest = { agentId: this.options.agentId, plugin, function: fn, args, context, trustTier: call.trustTier };
    if (approvalId !== undefined && approvalId !== '') request.approvalId = approvalId;
    const sessionId = currentSession() ?? this.options.sessionId;
    if (sessionId !== '') request.sessionId = sessionId;
    refuseNonFinite(request);
    // An answer to an approval is never cacheable, and a cached answer must not stand in for presenting one.
    const hash = this.options.cache && request.approvalId === undefined ? DecisionCache.hashOf(request) : '';
    const cached = this.stopSubscription !== null && hash !== '' ? this.cache.get(hash) : undefined;
    if (cached !== undefined) return this.reused(cached, request);
    let decision: GatewayDecision;
    try {
      decision = await this.ask(request, call.timeoutMs);
    } catch (error) {
      const answer = this.withoutDecision(error);
      // A denial the client made itself is on the trail: the gateway never saw the call.
      if (!answer.allowed) await this.audit({ plugin, function: fn, decision: 'deny', durationMs: 0, resultSummary: answer.reason });
      return answer;
    }
    if (hash !== '') {
      this.cache.put(hash, decision);
      this.follow(decision.policyVersion);
    }
    return { ...decision, allowed: decision.decision === 'allow', via: this.transport.name };
  }

  /**
   * A cached decision applied: an audit event of its own (`cached`, naming the decision reused),
   * so that every decision the client applies, a cached denial too, reaches the trail.
   */
  private async reused(decision: GatewayDecision, request: CheckRequest): Promise<CheckResult> {
    if (decision.decision !== 'pending') {
      await this.audits.record({
        agentId: this.options.agentId,
        plugin: request.plugin,
        function: request.function,
        decision: decision.decision,
        durationMs: 0,
        decisionId: decision.decisionId || undefined,
        traceId: decision.traceId || undefined,
        cached: true,
      });
    }
    return { ...decision, allowed: decision.decision === 'allow', via: 'cache' };
  }

  /**
   * A pending call's outcome: its approval waited for (waitForApproval), then, once approved, the
   * identical call asked again with it; a rejected, expired or used approval, or a wait that ended
   * first, is a denial naming why.
   */
  private async afterApproval(pending: CheckResult, plugin: string, fn: string, args: Record<string, unknown>, context: Record<string, unknown>, call: CallOptions): Promise<CheckResult> {
    const id = pending.approvalId;
    const status = await this.waitForApproval(id);
    if (status === 'approved') return this.decide(plugin, fn, args, context, call, id);
    const why = status === 'pending' ? `was not decided within the ${this.options.approvalWaitSeconds} s guard() waits (approvalWaitSeconds)` : `is ${status}`;
    return { ...pending, decision: 'deny', allowed: false, reason: `Approval ${id} ${why}: ${pending.reason}` };
  }

  /** Records what a call did; resolves with the event's id once it is in the write-ahead file (durable as auditDurability says). */
  audit(record: AuditRecord): Promise<string> {
    return this.audits.record({ agentId: this.options.agentId, ...fitted(record) });
  }

  /**
   * check(), then run `call` if allowed, then audit() its duration and a summary of its result
   * (summaryOf: the result's shape, never its content); a soft denial returns SoftDenial without
   * running it. A call allowed without a gateway decision is one event, its summary saying so.
   * A call a `require_approval` rule holds waits, at most approvalWaitSeconds, for a person to
   * decide (docs/approvals.md); approved, the identical call is asked again with the approval,
   * which lets it through once, and runs; rejected, expired, or not decided in time, it is a
   * denial: PolicyDeniedError, or SoftDenial when throwOnDenied is false.
   */
  async guard<T>(plugin: string, fn: string, args: Record<string, unknown>, call: () => T | Promise<T>, context: Record<string, unknown> = {}): Promise<T | SoftDenial> {
    const options = callOptions(this.options, plugin);
    const first = await this.decide(plugin, fn, args, context, options);
    const result = settle(first.decision === 'pending' ? await this.afterApproval(first, plugin, fn, args, context, options) : first, options);
    if (!result.allowed) return new SoftDenial(result);
    const outcome = { plugin, function: fn, decision: 'allow' as const, decisionId: result.decisionId || undefined, traceId: result.traceId || undefined };
    const flagged = (summary: string) => (withoutAnswer(result) ? `${result.reason}; ${summary}` : summary);
    const started = performance.now();
    try {
      const value = await call();
      await this.audit({ ...outcome, durationMs: performance.now() - started, resultSummary: flagged(summaryOf(value)) });
      return value;
    } catch (error) {
      await this.audit({ ...outcome, durationMs: performance.now() - started, resultSummary: flagged(raisedSummary(error)) });
      throw error;
    }
  }

  /** Sends every queued audit event now (they are also sent on their own, in batches). */
  flushAudit(): Promise<void> {
    return this.audits.flush();
  }

  /** Audit events written but not yet acknowledged by the gateway. */
  get pendingAudit(): number {
    return this.audits.pending;
  }

  /** Stops following policy changes, sends what audit events it can, and closes the connections. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopSubscription?.();
    this.stopSubscription = null;
    // In the same turn as the cancel: a channel closed a moment after its Subscribe call was
    // cancelled kept its connection open, and Node running, for good (grpc-js 1.14). Audit
    // events go over HTTP, so the flush below does not need the channel.
    this.grpc.close();
    await this.audits.close();
  }

  /**
   * gRPC's answer, or HTTP's when gRPC cannot connect; then HTTP for grpcRetrySeconds before
   * gRPC is tried again. Not for good: a gateway answers UNAVAILABLE while its database is away
   * too, and one such answer must not cost the client gRPC for the rest of its life.
   */
  private async ask(request: CheckRequest, timeoutMs: number): Promise<GatewayDecision> {
    if (Date.now() >= this.grpcDownUntil) {
      this.transport = this.grpc;
      try {
        return await this.grpc.evaluate(request, timeoutMs);
      } catch (error) {
        if (!(error instanceof GatewayUnavailableError && error.cannotConnect)) throw error;
        this.grpcDownUntil = Date.now() + this.options.grpcRetrySeconds * 1000;
      }
    }
    this.transport = this.http;
    return this.http.evaluate(request, timeoutMs);
  }

  /**
   * No decision came: a refusal (a tripped rate limit included: RESOURCE_EXHAUSTED is an error
   * in proto/pdp.proto, and the Python SDK raises it too) is thrown. Fail-open allows a timeout
   * or an outage; fail-closed denies a timeout (thrown as GatewayTimeoutError when throwOnDenied,
   * settle()) and throws an outage, whatever throwOnDenied says: it says how a denial is shown,
   * never whether a call runs (sdk/fixtures/decision-cases.json, `timeouts`). The reason is the
   * audit text all SDKs write (sdk/fixtures/result-summaries.json).
   */
  private withoutDecision(error: unknown): CheckResult {
    if (!(error instanceof GatewayUnavailableError || error instanceof GatewayTimeoutError)) throw error;
    const timedOut = error instanceof GatewayTimeoutError;
    const open = this.options.failureMode === 'fail-open';
    if (!open && !timedOut) throw error;
    const why = error.message.slice(0, MAX_REASON);
    const reason = open ? `${timedOut ? 'timeout' : 'fail-open'}: allowed without a gateway decision (${why})` : `timeout: denied without a gateway decision (${why})`;
    return {
      decision: open ? 'allow' : 'deny',
      allowed: open,
      reason,
      policy: '',
      rule: '',
      policyVersion: 0,
      traceId: '',
      decisionId: '',
      cacheable: false,
      cacheTtlMs: 0,
      enforced: false,
      approvalId: '',
      approvalExpiresAt: '',
      via: timedOut ? 'timeout' : 'failure-mode',
    };
  }

  /** Follows Subscribe from `version` so a change empties the cache at once. */
  private follow(version: number): void {
    if (this.stopSubscription !== null || this.closed || Date.now() < this.resubscribeAt) return;
    this.cache.resumeFrom(version);
    this.stopSubscription = this.grpc.subscribe(
      version,
      (event) => this.cache.invalidate(event.policyVersion),
      () => {
        this.stopSubscription = null;
        this.resubscribeAt = Date.now() + RESUBSCRIBE_AFTER_MS;
        this.cache.invalidate();
      },
    );
  }
}

/**
 * JSON, which both transports and the cache key are made of, turns NaN and ±Infinity into null:
 * a policy would judge a value the call never gets (`args.amount > 1000` lets Infinity through).
 * Refused as the gateway refuses such numbers, whatever the options.
 */
function refuseNonFinite(request: CheckRequest): void {
  for (const part of ['args', 'context'] as const) {
    JSON.stringify(request[part], (key, value: unknown) => {
      if (typeof value === 'number' && !Number.isFinite(value)) {
        throw new GatewayRejectedError('invalid_argument', `${part}: ${key} is not a finite number (${value})`);
      }
      return value;
    });
  }
}

/**
 * The record cut to what POST /v1/audit takes: the gateway refuses a longer summary or a
 * duration out of range as malformed, and a refused event is dropped, so audit() would have
 * resolved for an event that never reaches the trail.
 */
function fitted(record: AuditRecord): AuditRecord {
  const durationMs = Number.isNaN(record.durationMs) ? 0 : Math.min(Math.max(record.durationMs, 0), MAX_AUDIT_DURATION_MS);
  return { ...record, durationMs, resultSummary: record.resultSummary?.slice(0, MAX_AUDIT_SUMMARY) };
}

function settle(result: CheckResult, call: CallOptions): CheckResult {
  if (result.allowed || !call.throwOnDenied) return result;
  if (result.via === 'timeout') throw new GatewayTimeoutError(result.reason);
  throw result.decision === 'pending' ? new ApprovalPendingError(result) : new PolicyDeniedError(result);
}

/** An answer the client made itself, no decision having come. */
function withoutAnswer(result: CheckResult): boolean {
  return result.via === 'timeout' || result.via === 'failure-mode';
}

/**
 * The client's write-ahead file: auditLogPath, or a new file of its own in the default directory,
 * into which the files that ended processes left there for the agent are moved.
 */
async function openAuditLog(options: ResolvedOptions): ReturnType<typeof WriteAheadLog.openFile> {
  if (options.auditLogPath !== null) return WriteAheadLog.openFile(options.auditLogPath);
  await fs.promises.mkdir(options.auditDirectory, { recursive: true });
  const own = processAuditFile(options.auditDirectory, options.agentId);
  return WriteAheadLog.openFile(own, await claimOrphans(options.auditDirectory, options.agentId));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
