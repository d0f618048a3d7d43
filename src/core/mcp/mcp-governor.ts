import { Inject, Injectable } from '@nestjs/common';
import { McpError, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import type { AuthenticatedAgent } from '../decision/agent-authenticator';
import { DecisionRequest, DecisionService, Verdict } from '../decision/decision.service';
import type { Decision, ToolFacts } from '../policy-engine/types';
import { heldDenial, mcpErrorOf, newcomerAlert } from './mcp-errors';
import { outcomeOf, Refusal, statusOf } from '../decision/verdict-answer';
import type { Listed, ListingKind } from './mcp-listing';
import type { McpServerConfig } from './mcp-server-list';
import { PinState, TOOL_PINS, ToolPins } from './tool-pins';

/** Who sends a message, on which HTTP request: what every decision about it reads. */
export interface McpCaller {
  principal: AuthenticatedAgent;
  server: McpServerConfig;
  traceId: string;
  /** `X-Service-Context-*` headers (the caller's claim). */
  context: Readonly<Record<string, unknown>>;
  /** X-Service-Approval, for a retry that names its approval in a header instead of `_meta`. */
  approvalHeader?: string;
  /** The MCP session (Mcp-Session-Id) the message belongs to; absent for a client that keeps no session (then the agent's own scope). */
  sessionId?: string;
  /** What was decided of the governed requests the HTTP request carries, by JSON-RPC id (McpRelay.rule). */
  rulings?: ReadonlyMap<RequestId, Ruling>;
}

/** What the gateway decided of one message the agent sent: forwarded with its verdict, or refused (already recorded). */
export type Ruling = { allowed: Verdict; started: number } | { refused: McpError; decision: Decision; pending?: boolean };

/** The agent's requests the gateway decides (docs/mcp.md, "How MCP is governed"); every other method is relayed unchanged. */
export const GOVERNED_REQUESTS: ReadonlySet<string> = new Set(['tools/call', 'resources/read', 'resources/subscribe', 'prompts/get']);
/** The server's requests to the agent the gateway decides: a tool server asking the agent's model or its user is an injection path. */
export const GOVERNED_SERVER_REQUESTS: ReadonlySet<string> = new Set(['sampling/createMessage', 'elicitation/create']);

/**
 * How a definition its pin holds, or a tool its server does not list, is refused: as a denial,
 * whatever MODE says (MODE=audit lets through what a policy would deny, and a pin is no policy).
 */
const PINNED: Refusal = { kind: 'denied' };

/** The status an audit entry of a call the agent cancelled carries (as nginx's "client closed request"). */
export const CANCELLED_STATUS = 499;

/** How a governed request of the agent finds what its server lists now. */
export interface ListingLookup {
  find(kind: ListingKind, name: string): Promise<Listed | undefined>;
}

/**
 * The decisions of the MCP gateway, one governed decision (DecisionService) per governed
 * message: the agent's `tools/call` (`call:<server>/<tool>`), `resources/read` and
 * `resources/subscribe` (`read:<server>/<uri>`), `prompts/get` (`prompt:<server>/<name>`), the
 * server's `sampling/createMessage` and `elicitation/create` (`sample:<server>`,
 * `elicit:<server>`), and the filtering of listings. It decides and records through
 * DecisionService only; the relay forwards what it allowed.
 */
@Injectable()
export class McpGovernor {
  constructor(
    private readonly decisions: DecisionService,
    @Inject(TOOL_PINS) private readonly pins: ToolPins,
  ) {}

  /** Decides one governed request of the agent; a refusal is recorded here, an allowed one when its answer comes (`recordAnswered`). */
  async rule(caller: McpCaller, method: string, params: Record<string, unknown>, lookup: ListingLookup): Promise<Ruling> {
    const started = performance.now();
    const subject = subjectOf(caller.server.name, method, params);
    const request: DecisionRequest = { ...this.requestOf(caller, subject), approvalId: approvalIdOf(params._meta) ?? caller.approvalHeader };
    const listed = subject.kind === undefined ? undefined : await lookup.find(subject.kind, subject.name!);
    let state: PinState | undefined;
    if (listed !== undefined) state = (await this.pins.check(caller.principal.agent.orgId, caller.server.name, [listed.definition])).get(listed.definition.name)!;
    if (state !== undefined) {
      request.tool = { ...request.tool!, pinned: state.pinned };
      if (state.newcomer === true && state.pinned) this.recordNewcomer(caller, listed!.definition.name);
      if (!state.pinned) return this.refuse(this.decisions.refuse(caller.principal, request, heldDenial(caller.server.name, listed!.definition.name, state, state.newlyHeld)), PINNED, started);
    }
    const verdict = await this.decisions.decide(caller.principal, request);
    const outcome = outcomeOf(verdict);
    if (outcome.kind !== 'allowed') return this.refuse(verdict, outcome, started);
    if (subject.kind !== undefined && listed === undefined && this.pins.pinning) return this.refuse(this.decisions.refuse(caller.principal, request, unlisted(caller.server.name, subject)), PINNED, started);
    return { allowed: verdict, started };
  }

  /** Records an allowed request once its answer was relayed, or once the agent cancelled it (with the time it ran). */
  recordAnswered(ruling: { allowed: Verdict; started: number }, outcome: 'answered' | 'failed' | 'cancelled', credentialId?: string): void {
    const status = outcome === 'answered' ? 200 : outcome === 'cancelled' ? CANCELLED_STATUS : 502;
    this.decisions.record(ruling.allowed, { status, upstreamStatus: outcome === 'failed' ? null : 200, latencyMs: performance.now() - ruling.started, credentialId });
  }

  /** Decides a request the server sends the agent (sampling, elicitation), recorded at once; undefined when allowed. */
  async ruleServerRequest(caller: McpCaller, method: string, params: Record<string, unknown>): Promise<McpError | undefined> {
    const started = performance.now();
    const { _meta: _dropped, ...args } = params;
    const verb = method === 'sampling/createMessage' ? 'sample' : 'elicit';
    const request: DecisionRequest = {
      ...this.requestOf(caller, { action: `${verb}:${caller.server.name}`, function: method, resource: caller.server.name }),
      args,
      traceId: randomUUID().replace(/-/g, ''),
    };
    const verdict = await this.decisions.decide(caller.principal, request);
    const outcome = outcomeOf(verdict);
    this.decisions.record(verdict, { status: statusOf(outcome, 'refusing'), latencyMs: performance.now() - started });
    return outcome.kind === 'allowed' ? undefined : mcpErrorOf(verdict, outcome);
  }

  /**
   * What of a listing the agent sees: not what its pin holds, nor what a policy denies this agent
   * whatever the request carries (so models are not tempted). A definition newly held records
   * its denial with the alert; one new on a pinned server, its alert.
   */
  async filter(caller: McpCaller, kind: ListingKind, items: readonly Listed[]): Promise<Set<Listed>> {
    const { principal, server } = caller;
    const pinned = kind === 'resource' ? undefined : await this.pins.check(principal.agent.orgId, server.name, items.map((item) => item.definition), { fresh: true });
    const policies = await this.decisions.policiesFor(principal.agent);
    const offered = new Set<Listed>();
    for (const item of items) {
      const state = pinned?.get(item.definition.name);
      const subject = listedSubject(server.name, kind, item);
      const request = this.requestOf(caller, subject);
      if (state !== undefined && !state.pinned) {
        if (state.newlyHeld) this.recordHeld(caller, request, item.definition.name, state);
        continue;
      }
      if (state?.newcomer === true) this.recordNewcomer(caller, item.definition.name);
      if (request.tool !== undefined) request.tool = { ...request.tool, pinned: true };
      if (policies.denialRegardlessOfRequest(this.decisions.inputFor(principal, request), policies.applicable(request)) === undefined) offered.add(item);
    }
    return offered;
  }

  /** Records a refusal and answers it as its JSON-RPC error. */
  private refuse(verdict: Verdict, outcome: Refusal, started: number): Ruling {
    this.decisions.record(verdict, { status: statusOf(outcome, 'refusing'), latencyMs: performance.now() - started });
    return { refused: mcpErrorOf(verdict, outcome), decision: verdict.decision, ...(outcome.kind === 'pending' ? { pending: true } : {}) };
  }

  /** Records the denial that hid a newly held definition from a listing, with its alert. */
  private recordHeld(caller: McpCaller, request: DecisionRequest, name: string, state: PinState): void {
    const verdict = this.decisions.refuse(caller.principal, { ...request, action: request.action.replace(/^[a-z]+:/, 'list:') }, heldDenial(caller.server.name, name, state, true));
    this.decisions.record(verdict, { status: 200, latencyMs: 0 });
  }

  private recordNewcomer(caller: McpCaller, name: string): void {
    const request = this.requestOf(caller, { action: `list:${caller.server.name}/${name}`, function: name, resource: name });
    this.decisions.record(this.decisions.refuse(caller.principal, request, newcomerAlert(caller.server.name, name)), { status: 200, latencyMs: 0 });
  }

  private requestOf(caller: McpCaller, subject: Subject): DecisionRequest {
    const request: DecisionRequest = {
      source: 'mcp',
      traceId: caller.traceId,
      action: subject.action,
      resource: subject.resource,
      plugin: caller.server.name,
      function: subject.function,
      args: subject.args ?? {},
      context: caller.context,
      method: 'POST',
      path: `/mcp/${caller.server.name}`,
    };
    if (caller.sessionId !== undefined) request.sessionId = caller.sessionId;
    if (subject.kind === 'tool') request.tool = { server: caller.server.name, name: subject.name!, pinned: true } satisfies ToolFacts;
    return request;
  }
}

/** What a governed message is about, in the decision input's terms. */
interface Subject {
  action: string;
  function: string;
  resource: string;
  args?: Readonly<Record<string, unknown>>;
  /** The listing that names it, when it is pinned: its definition is checked before the decision. */
  kind?: ListingKind;
  name?: string;
}

function subjectOf(server: string, method: string, params: Record<string, unknown>): Subject {
  if (method === 'tools/call') {
    const name = stringOf(params.name);
    return { action: `call:${server}/${name}`, function: name, resource: name, args: recordOf(params.arguments), kind: 'tool', name };
  }
  if (method === 'prompts/get') {
    const name = stringOf(params.name);
    return { action: `prompt:${server}/${name}`, function: name, resource: name, args: recordOf(params.arguments), kind: 'prompt', name };
  }
  const uri = stringOf(params.uri);
  return { action: `read:${server}/${uri}`, function: method, resource: uri, args: { uri } };
}

function listedSubject(server: string, kind: ListingKind, item: Listed): Subject {
  if (kind === 'tool') return { action: `call:${server}/${item.name}`, function: item.name, resource: item.name, kind, name: item.name };
  if (kind === 'prompt') return { action: `prompt:${server}/${item.name}`, function: item.name, resource: item.name };
  if (kind === 'resource') return { action: `read:${server}/${item.name}`, function: 'resources/read', resource: item.name, args: { uri: item.name } };
  return { action: `read:${server}/${item.name}`, function: 'resources/read', resource: item.name };
}

/** A governed request naming what its server does not list (pinning on): refused, nothing to check it against. */
function unlisted(server: string, subject: Subject): Decision {
  const what = subject.kind === 'prompt' ? 'prompt' : 'tool';
  return { effect: 'deny', policy: 'tool-pinning', rule: 'not-listed', reason: `MCP server ${server} does not list a ${what} ${subject.name}: a ${what} it does not list cannot be checked against its pin` };
}

function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function recordOf(value: unknown): Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** The approval a retried request presents in its `_meta` (docs/approvals.md). */
function approvalIdOf(meta: unknown): string | undefined {
  const approvalId = (meta as { approvalId?: unknown } | undefined)?.approvalId;
  return typeof approvalId === 'string' && approvalId !== '' ? approvalId : undefined;
}
