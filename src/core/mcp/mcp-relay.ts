import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage, JSONRPCNotification, JSONRPCRequest, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { LATEST_PROTOCOL_VERSION, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { DecisionTokenSigner, TOOL_CALL_TOKEN_KEY, toolCallHash } from '../decision/decision-token';
import type { InjectedCredential } from '../decision/upstream-credentials';
import { errorResponse, McpErrorCode } from './mcp-errors';
import { GOVERNED_REQUESTS, GOVERNED_SERVER_REQUESTS, McpCaller, McpGovernor, Ruling } from './mcp-governor';
import { KIND_OF_METHOD, ListingKind, LISTINGS, listedItems, McpListings } from './mcp-listing';
import type { McpServerConfig } from './mcp-server-list';
import type { TableSession } from './mcp-session-table';
import { UpstreamRedirect } from './upstream-http';

/** A request of the gateway's own upstream (a listing, a one-off session's handshake) that gets no answer within this long fails. */
const OWN_REQUEST_TIMEOUT_MS = 10_000;
/** Ids of the gateway's own upstream requests: a string no SDK client sends (they count with numbers). */
const OWN_ID_PREFIX = 'agentgov-gateway-';

/** An agent's request on its way upstream, until its answer comes back. */
interface InFlight {
  method: string;
  ruling?: Extract<Ruling, { allowed: unknown }>;
  progressToken?: string | number;
}

/** Everything a relay needs besides its two transports. */
export interface RelayDeps {
  governor: McpGovernor;
  logger: Logger;
  version: string;
  /** The credential in force for the session's organization and server (its upstream fetch injects it): its id goes in the audit entries. */
  credential: () => InjectedCredential | undefined;
  /** The host's decision token signer; null when DECISION_TOKENS=false. */
  tokens: DecisionTokenSigner | null;
}

/**
 * One agent session relayed to one upstream session of its own (docs/mcp.md, "The relay"): the
 * official SDK's Streamable HTTP transports on both sides (its server transport to the agent,
 * its client transport to the server), every JSON-RPC message passed through unchanged in both
 * directions (`_meta` included), except what the gateway governs: the agent's governed requests
 * are decided before they are forwarded (McpGovernor, the ruling made when the HTTP request came
 * in), the server's sampling and elicitation requests before they reach the agent, and listings
 * are filtered on their way back. Like the MCP Inspector's proxy, at the level of the SDK's
 * `Transport`; no upstream session is ever shared with another agent session.
 */
export class McpRelay implements TableSession {
  usedMs = Date.now();
  readonly listings: McpListings;
  private readonly inFlight = new Map<RequestId, InFlight>();
  private readonly progress = new Map<string | number, RequestId>();
  private readonly own = new Map<string, { resolve: (result: Record<string, unknown>) => void; reject: (error: Error) => void }>();
  private ownCount = 0;
  /** Messages to the server queued behind an allowed call whose decision token is being signed (forwardAllowedCall). */
  private readonly outbox: Array<{ message: JSONRPCMessage; ready: boolean }> = [];
  /** The agent's request most recently forwarded, still waiting: where a server message that names no request goes. */
  private latest: RequestId | undefined;
  private ended = false;

  constructor(
    readonly server: McpServerConfig,
    /** Who last spoke on this session: the caller of the server's own requests to the agent. */
    private caller: McpCaller,
    readonly agent: StreamableHTTPServerTransport,
    private readonly upstream: StreamableHTTPClientTransport,
    private readonly deps: RelayDeps,
    private readonly onEnd: (relay: McpRelay) => void,
  ) {
    this.agentId = caller.principal.agent.id;
    this.orgId = caller.principal.agent.orgId;
    this.listings = new McpListings(server.name, (method, params) => this.ownRequest(method, params));
    agent.onmessage = (message, extra) => this.fromAgent(message, (extra?.authInfo?.extra?.caller as McpCaller | undefined) ?? this.caller);
    agent.onclose = () => this.end();
    agent.onerror = (error) => deps.logger.debug({ err: error, server: server.name }, 'MCP agent transport error');
    upstream.onmessage = (message) => this.fromUpstream(message);
    upstream.onerror = (error) => {
      // The SDK reports every failed upstream request here (then rejects its send): a redirect is the server's misconfiguration, for the operator to see.
      if (error instanceof UpstreamRedirect) deps.logger.warn({ server: server.name, status: error.status }, 'MCP server answered a redirect; not followed');
      else deps.logger.debug({ error: this.withoutCredential(error.message), server: server.name }, 'MCP upstream transport error');
    };
  }

  /** The agent session's id (Mcp-Session-Id), the policy session an MCP session is; empty for a one-off relay of a client that keeps no session. */
  get id(): string {
    return this.agent.sessionId ?? '';
  }

  /** The caller, deciding in this session: an MCP session is the policy session its calls remember (docs/policies.md "Sessions"). */
  private inSession(caller: McpCaller): McpCaller {
    return this.id === '' ? caller : { ...caller, sessionId: this.id };
  }

  /** The agent that opened the session, and its organization: the only ones it ever answers. */
  readonly agentId: string;
  readonly orgId: string;

  /** The upstream session's id, as the server named it. */
  get upstreamSessionId(): string | undefined {
    return this.upstream.sessionId;
  }

  async start(): Promise<void> {
    await this.upstream.start();
  }

  /**
   * The handshake a one-off relay makes itself, for a client that keeps no session: the gateway
   * initializes the upstream session with no capabilities of its own (such a client cannot be
   * asked anything).
   */
  async initializeUpstream(): Promise<void> {
    const result = await this.ownRequest('initialize', {
      protocolVersion: LATEST_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: 'agent-governance-gateway', version: this.deps.version },
    });
    if (typeof result.protocolVersion === 'string') this.upstream.setProtocolVersion(result.protocolVersion);
    await this.upstream.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  /** Decides every governed request of an HTTP request's messages, one by one (a batch too); the rulings travel with the caller. */
  async rule(caller: McpCaller, messages: readonly unknown[]): Promise<Map<RequestId, Ruling>> {
    const rulings = new Map<RequestId, Ruling>();
    for (const message of messages) {
      if (!isRequest(message) || !GOVERNED_REQUESTS.has(message.method)) continue;
      rulings.set(message.id, await this.ruleOne(caller, message));
    }
    return rulings;
  }

  private async ruleOne(caller: McpCaller, message: JSONRPCRequest): Promise<Ruling> {
    try {
      return await this.deps.governor.rule(this.inSession(caller), message.method, (message.params ?? {}) as Record<string, unknown>, this.listings);
    } catch (error) {
      if (error instanceof McpError) return { refused: error, decision: { effect: 'deny', policy: 'mcp', rule: 'upstream', reason: error.message } };
      throw error;
    }
  }

  /** Ends the session: the upstream session is terminated (DELETE) and closed, the agent's closed. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd(this);
    for (const { reject } of this.own.values()) reject(new Error('the session ended'));
    this.own.clear();
    void this.upstream
      .terminateSession()
      .catch(() => undefined)
      .then(() => this.upstream.close())
      .catch(() => undefined);
    void this.agent.close().catch(() => undefined);
  }

  private fromAgent(message: JSONRPCMessage, caller: McpCaller): void {
    this.caller = caller;
    // Only the gateway vouches for a decision: a token the agent put in its message never reaches the server.
    const meta = (message as { params?: { _meta?: Record<string, unknown> } }).params?._meta;
    if (meta !== undefined && meta !== null && TOOL_CALL_TOKEN_KEY in meta) delete meta[TOOL_CALL_TOKEN_KEY];
    if (isRequest(message)) return this.requestFromAgent(message, caller);
    if (isNotification(message) && message.method === 'notifications/cancelled') this.cancelled((message.params as { requestId?: RequestId } | undefined)?.requestId);
    this.toUpstream(message);
  }

  private requestFromAgent(message: JSONRPCRequest, caller: McpCaller): void {
    const ruling = GOVERNED_REQUESTS.has(message.method) ? (caller.rulings?.get(message.id) ?? missingRuling()) : undefined;
    if (ruling !== undefined && 'refused' in ruling) return this.toAgent(errorResponse(message.id, ruling.refused));
    const progressToken = (message.params?._meta as { progressToken?: string | number } | undefined)?.progressToken;
    this.inFlight.set(message.id, { method: message.method, ruling, progressToken });
    if (progressToken !== undefined) this.progress.set(progressToken, message.id);
    this.latest = message.id;
    if (message.method === 'tools/call') return this.forwardAllowedCall(message);
    this.toUpstream(message);
  }

  /**
   * The one place an allowed `tools/call` goes upstream, as the agent sent it (its `_meta` too):
   * its ruling allowed it (McpGovernor.rule) and is recorded when the answer comes back. An allow
   * carries its decision token in `params._meta` (docs/security.md "Decision tokens"), signed at
   * the end of the turn; what the agent sends after it waits its turn behind it, so the server
   * sees the messages in the agent's order.
   */
  private forwardAllowedCall(message: JSONRPCRequest): void {
    const verdict = this.inFlight.get(message.id)?.ruling?.allowed;
    const tokens = this.deps.tokens;
    if (tokens === null || verdict === undefined || verdict.decision.effect !== 'allow') return this.toUpstream(message);
    const params = (message.params ??= {}) as Record<string, unknown> & { _meta?: Record<string, unknown> };
    const claims = DecisionTokenSigner.claims({
      jti: verdict.id,
      sub: verdict.principal.agent.id,
      org: verdict.principal.agent.orgId,
      act: verdict.request.action,
      req: toolCallHash(typeof params.name === 'string' ? params.name : '', params.arguments),
      apr: verdict.approvalId,
    });
    const waiting = { message: message as JSONRPCMessage, ready: false };
    this.outbox.push(waiting);
    tokens.issue(claims, (token) => {
      params._meta = { ...params._meta, [TOOL_CALL_TOKEN_KEY]: token };
      waiting.ready = true;
      this.flushOutbox();
    });
  }

  /** Sends what the outbox holds, in order, up to the first message still waiting for its token. */
  private flushOutbox(): void {
    while (this.outbox.length > 0 && this.outbox[0].ready) this.sendUpstream(this.outbox.shift()!.message);
  }

  /** The agent cancelled a request: recorded as cancelled, with the time it ran; the cancellation goes upstream. */
  private cancelled(requestId: RequestId | undefined): void {
    if (requestId === undefined) return;
    const flight = this.settle(requestId);
    if (flight?.ruling !== undefined) this.deps.governor.recordAnswered(flight.ruling, 'cancelled', this.deps.credential()?.id);
  }

  private fromUpstream(message: JSONRPCMessage): void {
    if (isResponse(message)) return this.responseFromUpstream(message);
    if (isRequest(message)) {
      if (GOVERNED_SERVER_REQUESTS.has(message.method)) return void this.serverRequest(message);
      return this.toAgent(message, this.relatedTo(message));
    }
    if (isNotification(message) && message.method.endsWith('/list_changed')) this.listings.changed(message.method);
    this.toAgent(message, this.relatedTo(message));
  }

  private responseFromUpstream(message: JSONRPCMessage & { id: RequestId }): void {
    if (typeof message.id === 'string' && message.id.startsWith(OWN_ID_PREFIX)) return this.ownAnswered(message);
    const flight = this.settle(message.id);
    const result = (message as { result?: Record<string, unknown> }).result;
    if (flight?.ruling !== undefined) this.deps.governor.recordAnswered(flight.ruling, 'answered', this.deps.credential()?.id);
    if (flight?.method === 'initialize' && typeof result?.protocolVersion === 'string') this.upstream.setProtocolVersion(result.protocolVersion);
    const kind = flight === undefined ? undefined : KIND_OF_METHOD.get(flight.method);
    if (kind !== undefined && result !== undefined) return void this.filtered(message.id, kind, result);
    this.toAgent(message);
  }

  /** A listing on its way to the agent, without what the agent may not see; a complete one is kept for the calls that follow. */
  private async filtered(id: RequestId, kind: ListingKind, result: Record<string, unknown>): Promise<void> {
    try {
      const items = listedItems(kind, result, this.server.name);
      const offered = await this.deps.governor.filter(this.inSession(this.caller), kind, items);
      if (result.nextCursor === undefined) this.listings.learn(kind, items);
      this.toAgent({ jsonrpc: '2.0', id, result: { ...result, [LISTINGS[kind].field]: items.filter((item) => offered.has(item)).map((item) => item.item) } });
    } catch (error) {
      this.toAgent(errorResponse(id, error instanceof McpError ? error : new McpError(McpErrorCode.UpstreamUnavailable, (error as Error).message)));
    }
  }

  /** The server asks the agent's model (sampling) or its user (elicitation): decided first; a refusal is the server's answer. */
  private async serverRequest(message: JSONRPCRequest): Promise<void> {
    let refusal: McpError | undefined;
    try {
      refusal = await this.deps.governor.ruleServerRequest(this.inSession(this.caller), message.method, (message.params ?? {}) as Record<string, unknown>);
    } catch (error) {
      refusal = new McpError(McpErrorCode.InvalidRequest, `The gateway could not decide ${message.method}: ${(error as Error).message}`);
    }
    if (refusal !== undefined) return this.toUpstream(errorResponse(message.id, refusal));
    this.toAgent(message, this.relatedTo(message));
  }

  /** The agent request a server message belongs with: a progress notification's, else the latest one still waiting (else the standalone stream). */
  private relatedTo(message: JSONRPCMessage): RequestId | undefined {
    const token = (message as JSONRPCNotification).params?.progressToken as string | number | undefined;
    if ((message as JSONRPCNotification).method === 'notifications/progress' && token !== undefined) return this.progress.get(token) ?? this.latest;
    return this.latest;
  }

  private settle(id: RequestId): InFlight | undefined {
    const flight = this.inFlight.get(id);
    if (flight === undefined) return undefined;
    this.inFlight.delete(id);
    if (flight.progressToken !== undefined) this.progress.delete(flight.progressToken);
    if (this.latest === id) this.latest = undefined;
    return flight;
  }

  /** Sends a message upstream, after any still waiting for its decision token. */
  private toUpstream(message: JSONRPCMessage): void {
    if (this.outbox.length === 0) return this.sendUpstream(message);
    this.outbox.push({ message, ready: true });
  }

  private sendUpstream(message: JSONRPCMessage): void {
    this.upstream.send(message).catch((error: unknown) => {
      if (!isRequest(message)) return this.deps.logger.debug({ err: error, server: this.server.name }, 'MCP message not delivered upstream');
      const flight = this.settle(message.id);
      if (flight?.ruling !== undefined) this.deps.governor.recordAnswered(flight.ruling, 'failed', this.deps.credential()?.id);
      this.toAgent(errorResponse(message.id, new McpError(McpErrorCode.UpstreamUnavailable, `MCP server ${this.server.name} cannot be reached: ${this.withoutCredential((error as Error).message)}`)));
      if (message.method === 'initialize') this.end();
    });
  }

  /** An upstream error's text (it quotes the server's answer) without the credential the gateway sent, should the server echo it. */
  private withoutCredential(text: string): string {
    const value = this.deps.credential()?.value;
    return value === undefined || value === '' ? text : text.split(value).join('[credential]');
  }

  private toAgent(message: JSONRPCMessage, relatedRequestId?: RequestId): void {
    if (this.ended) return;
    this.agent.send(message, relatedRequestId === undefined ? undefined : { relatedRequestId }).catch(() => {
      // The request it belonged with was answered meanwhile: the agent's standalone stream takes it (a response has no other place).
      if (relatedRequestId !== undefined && !isResponse(message)) void this.agent.send(message).catch(() => undefined);
    });
  }

  private ownRequest(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = `${OWN_ID_PREFIX}${++this.ownCount}`;
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.own.delete(id);
        reject(new McpError(McpErrorCode.UpstreamUnavailable, `MCP server ${this.server.name} did not answer ${method} within ${OWN_REQUEST_TIMEOUT_MS / 1000} s`));
      }, OWN_REQUEST_TIMEOUT_MS);
      timer.unref();
      const settle = { resolve: (result: Record<string, unknown>) => (clearTimeout(timer), resolve(result)), reject: (error: Error) => (clearTimeout(timer), reject(error)) };
      this.own.set(id, settle);
      this.upstream.send({ jsonrpc: '2.0', id, method, params }).catch((error: unknown) => {
        this.own.delete(id);
        settle.reject(new McpError(McpErrorCode.UpstreamUnavailable, `MCP server ${this.server.name} cannot be reached: ${this.withoutCredential((error as Error).message)}`));
      });
    });
  }

  private ownAnswered(message: JSONRPCMessage & { id: RequestId }): void {
    const waiting = this.own.get(message.id as string);
    if (waiting === undefined) return;
    this.own.delete(message.id as string);
    const { result, error } = message as { result?: Record<string, unknown>; error?: { code: number; message: string } };
    if (error !== undefined) waiting.reject(new McpError(error.code, `MCP server ${this.server.name}: ${error.message}`));
    else waiting.resolve(result ?? {});
  }
}

/** A governed request that reached the relay without its ruling: refused, never forwarded undecided. */
function missingRuling(): Ruling {
  return { refused: new McpError(McpErrorCode.InvalidRequest, 'The request reached the gateway without its decision'), decision: { effect: 'deny', policy: 'mcp', rule: 'undecided', reason: 'undecided' } };
}

// Shape tests of JSON-RPC messages the transports already validated (the SDK's own guards parse with zod, on the hot path).
function isRequest(message: unknown): message is JSONRPCRequest {
  return typeof message === 'object' && message !== null && 'method' in message && 'id' in message;
}

function isNotification(message: unknown): message is JSONRPCNotification {
  return typeof message === 'object' && message !== null && 'method' in message && !('id' in message);
}

function isResponse(message: unknown): message is JSONRPCMessage & { id: RequestId } {
  return typeof message === 'object' && message !== null && !('method' in message) && 'id' in message;
}
