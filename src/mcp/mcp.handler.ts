import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { CallToolRequestSchema, CallToolResult, isInitializeRequest, ListToolsRequestSchema, McpError, Tool } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import { Logger } from 'pino';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { header, requestTraceId } from '../common/raw-request';
import { ServiceHeader } from '../common/service-header';
import { AgentAuthenticator, AuthenticatedAgent } from '../decisions/agent-authenticator';
import { DecisionRequest, DecisionService, Verdict } from '../decisions/decision.service';
import { readJsonBody } from '../http/body-reader';
import { contextFromHeaders } from '../http/context-headers';
import { decisionHeaders } from '../http/decision-headers';
import { sendFailure } from '../http/json-route';
import type { LeanRoute } from '../http/lean-routes';
import { LOGGER } from '../logging/logging.module';
import type { Decision, ToolFacts } from '../policy-engine/types';
import { McpUpstreams, UpstreamUnavailable } from './mcp-upstreams';
import { McpServerConfig } from './mcp-server-list';
import { heldDenial, McpErrorCode, mcpErrorOf, pendingError } from './mcp-errors';
import { toolDefinition } from './tool-definition';
import { PinState, TOOL_PINS, ToolPins } from './tool-pins';

const PREFIX = '/mcp/';
/** An MCP session idle this long is forgotten; the client starts a new one. */
const SESSION_IDLE_MS = 30 * 60 * 1000;
/** Most sessions kept open at once; the least recently used goes first. */
const MAX_SESSIONS = 10_000;

/** An open MCP session: its SDK server and transport, for the agent and server that opened it. */
interface McpSession {
  mcp: Server;
  transport: StreamableHTTPServerTransport;
  agentId: string;
  server: string;
  usedMs: number;
}

/** Settings the MCP endpoints use. */
export const MCP_SETTINGS = Symbol('McpSettings');
export interface McpSettings {
  /** MAX_JSON_BYTES: the largest JSON-RPC body taken. */
  maxJsonBytes: number;
  version: string;
}

/** One MCP request: who asks, through which server, and the HTTP response its decision headers go on. */
interface McpExchange {
  principal: AuthenticatedAgent;
  server: McpServerConfig;
  request: IncomingMessage;
  response: ServerResponse;
  traceId: string;
}

/**
 * The MCP gateway (docs/mcp.md): `/mcp/<name>` speaks MCP Streamable HTTP to agents with the
 * official SDK's server and forwards to the upstream server MCP_SERVERS names, with the SDK's
 * client (McpUpstreams). A thin transport over the governed decision: `tools/call` becomes a
 * DecisionRequest (plugin = server, function = tool, args = the call's arguments, action
 * `call:<server>/<tool>`, source `mcp`) decided and recorded by DecisionService; `tools/list`
 * leaves out what the agent may never call and what a changed definition holds (ToolPins).
 * Every HTTP request is authenticated, sessions or not, so a revoked token fails at its next call
 * even inside an open session.
 */
@Injectable()
export class McpHandler implements LeanRoute, OnApplicationShutdown {
  /** Open sessions by id, least recently opened first. */
  private readonly sessions = new Map<string, McpSession>();

  constructor(
    @Inject(MCP_SETTINGS) private readonly settings: McpSettings,
    private readonly upstreams: McpUpstreams,
    @Inject(TOOL_PINS) private readonly pins: ToolPins,
    private readonly authenticator: AgentAuthenticator,
    private readonly decisions: DecisionService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  matches(_request: IncomingMessage, path: string): boolean {
    return path.startsWith(PREFIX);
  }

  name(): string {
    return '/mcp/*';
  }

  handle(request: IncomingMessage, response: ServerResponse, path: string): void {
    const traceId = requestTraceId(request);
    this.serve(request, response, path, traceId).catch((error: unknown) =>
      sendFailure(request, response, { traceId, headers: { [ServiceHeader.TraceId]: traceId }, logger: this.logger, what: 'MCP request' }, error),
    );
  }

  async onApplicationShutdown(): Promise<void> {
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(sessions.map((session) => session.mcp.close().catch(() => undefined)));
    await this.upstreams.close();
  }

  private async serve(request: IncomingMessage, response: ServerResponse, path: string, traceId: string): Promise<void> {
    const server = this.upstreams.server(path.slice(PREFIX.length));
    if (server === undefined) throw AppError.notFound('MCP server', path.slice(PREFIX.length));
    const principal = await this.authenticator.authenticate(request.headers.authorization);
    const body = request.method === 'POST' ? await readJsonBody(request, this.settings.maxJsonBytes) : undefined;
    const exchange: McpExchange = { principal, server, request, response, traceId };
    // The SDK hands `auth` to the handlers (extra.authInfo): how each request's exchange reaches them in a session.
    (request as IncomingMessage & { auth?: AuthInfo }).auth = { token: '', clientId: principal.agent.id, scopes: [], extra: { exchange } };
    response.setHeader(ServiceHeader.TraceId, traceId);
    const transport = await this.transportFor(exchange, body);
    await transport.handleRequest(request, response, body);
  }

  /**
   * The transport a request goes to: its session's (Mcp-Session-Id), a new session's for an
   * `initialize`, else a one-off stateless one (a client that keeps no session). A session is its
   * opening agent's and server's alone: another's id is answered as unknown.
   */
  private async transportFor(exchange: McpExchange, body: unknown): Promise<StreamableHTTPServerTransport> {
    const sessionId = exchange.request.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = this.sessions.get(sessionId);
      if (session === undefined || session.agentId !== exchange.principal.agent.id || session.server !== exchange.server.name) {
        throw new AppError(ErrorCode.NotFound, 'MCP session not found: initialize a new one');
      }
      session.usedMs = Date.now();
      return session.transport;
    }
    const mcp = this.mcpServer(exchange.server);
    if (!isInitializeRequest(body)) {
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      exchange.response.on('close', () => {
        void transport.close();
        void mcp.close();
      });
      await mcp.connect(transport);
      return transport;
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => this.open(id, { mcp, transport, agentId: exchange.principal.agent.id, server: exchange.server.name, usedMs: Date.now() }),
      onsessionclosed: (id) => void this.sessions.delete(id),
    });
    await mcp.connect(transport);
    return transport;
  }

  private open(id: string, session: McpSession): void {
    const now = Date.now();
    for (const [known, open] of this.sessions) {
      if (this.sessions.size < MAX_SESSIONS && now - open.usedMs < SESSION_IDLE_MS) break;
      this.sessions.delete(known);
      void open.mcp.close();
    }
    this.sessions.set(id, session);
  }

  /** The SDK's server of one session (or one stateless request); each request's exchange comes with it (`extra.authInfo`). */
  private mcpServer(server: McpServerConfig): Server {
    const mcp = new Server({ name: `agent-governance-gateway/${server.name}`, version: this.settings.version }, { capabilities: { tools: {} } });
    mcp.setRequestHandler(ListToolsRequestSchema, (_list, extra) => this.listTools(exchangeOf(extra.authInfo)));
    mcp.setRequestHandler(CallToolRequestSchema, (call, extra) => this.callTool(exchangeOf(extra.authInfo), call.params.name, call.params.arguments ?? {}, approvalIdOf(call.params._meta)));
    return mcp;
  }

  /** The server's tools, without those this agent may never call and those held by their pin. */
  private async listTools(exchange: McpExchange): Promise<{ tools: Tool[] }> {
    const { principal, server } = exchange;
    const tools = await this.upstream(() => this.upstreams.listTools(server));
    const states = await this.pins.check(principal.agent.orgId, server.name, tools.map(toolDefinition));
    const policies = await this.decisions.policiesOf(principal.agent.orgId);
    const offered: Tool[] = [];
    for (const tool of tools) {
      const state = states.get(tool.name)!;
      if (!state.pinned) {
        if (state.newlyHeld) this.recordHeld(exchange, tool.name, state, `list:${server.name}/${tool.name}`);
        continue;
      }
      const request = this.decisionRequest(exchange, tool.name, {}, state, `call:${server.name}/${tool.name}`);
      const input = this.decisions.inputFor(exchange.principal, request);
      if (policies.set.denialRegardlessOfRequest(input, policies.set.applicable(request)) === undefined) offered.push(tool);
    }
    return { tools: offered };
  }

  /** A governed tool call: pin, decision, then the upstream. */
  private async callTool(exchange: McpExchange, name: string, args: Record<string, unknown>, approvalId: string | undefined): Promise<CallToolResult> {
    const { principal, server } = exchange;
    const started = performance.now();
    const tool = await this.upstream(() => this.upstreams.tool(server, name));
    if (tool === undefined) throw new McpError(McpErrorCode.InvalidParams, `MCP server ${server.name} has no tool ${name}`);
    const state = (await this.pins.check(principal.agent.orgId, server.name, [toolDefinition(tool)])).get(name)!;
    const request = { ...this.decisionRequest(exchange, name, args, state, `call:${server.name}/${name}`), approvalId: approvalId ?? header(exchange.request, 'x-service-approval') };
    if (!state.pinned) {
      const verdict = this.decisions.refuse(principal, request, heldDenial(server.name, name, state, state.newlyHeld));
      return this.refused(exchange, verdict, started);
    }
    const verdict = await this.decisions.decide(principal, request);
    if (verdict.pending !== undefined) return this.awaitingApproval(exchange, verdict, started);
    if (verdict.decision.effect === 'deny' && verdict.enforced) return this.refused(exchange, verdict, started);
    this.setDecisionHeaders(exchange, verdict.decision);
    try {
      const result = await this.upstream(() => this.upstreams.callTool(server, name, args));
      this.decisions.record(verdict, { status: 200, upstreamStatus: 200, latencyMs: performance.now() - started });
      return result;
    } catch (error) {
      this.decisions.record(verdict, { status: 502, upstreamStatus: null, latencyMs: performance.now() - started });
      throw error;
    }
  }

  /** Records a refusal and answers it as a JSON-RPC error carrying the proxy's refusal fields (docs/proxy.md, mcp-errors.ts). */
  private refused(exchange: McpExchange, verdict: Verdict, started: number): never {
    const { decision } = verdict;
    this.setDecisionHeaders(exchange, decision);
    this.decisions.record(verdict, { status: decision.rateLimit ? 429 : 403, latencyMs: performance.now() - started });
    throw mcpErrorOf(verdict);
  }

  /** A call a `require_approval` rule holds: recorded, and answered as a JSON-RPC error with the approval to retry with. */
  private awaitingApproval(exchange: McpExchange, verdict: Verdict, started: number): never {
    if (!exchange.response.headersSent) {
      this.setDecisionHeaders(exchange, verdict.decision);
      exchange.response.setHeader(ServiceHeader.Decision, 'pending');
    }
    this.decisions.record(verdict, { status: 202, latencyMs: performance.now() - started });
    throw pendingError(verdict);
  }

  /** Records the denial that hid a newly held tool from a list, with its alert. */
  private recordHeld(exchange: McpExchange, tool: string, state: PinState, action: string): void {
    const request = this.decisionRequest(exchange, tool, {}, state, action);
    const verdict = this.decisions.refuse(exchange.principal, request, heldDenial(exchange.server.name, tool, state, true));
    this.decisions.record(verdict, { status: 200, latencyMs: 0 });
  }

  private decisionRequest(exchange: McpExchange, name: string, args: Record<string, unknown>, state: PinState, action: string): DecisionRequest {
    const tool: ToolFacts = { server: exchange.server.name, name, pinned: state.pinned };
    return {
      source: 'mcp',
      traceId: exchange.traceId,
      action,
      resource: name,
      plugin: exchange.server.name,
      function: name,
      args,
      context: contextFromHeaders(exchange.request.headers),
      tool,
      method: 'POST',
      path: `/mcp/${exchange.server.name}`,
    };
  }

  private setDecisionHeaders(exchange: McpExchange, decision: Decision): void {
    if (exchange.response.headersSent) return;
    for (const [name, value] of Object.entries(decisionHeaders(decision, exchange.traceId, exchange.principal.agent.id))) exchange.response.setHeader(name, value);
  }

  /** An upstream request; a server that is down or silent answers a clear JSON-RPC error, the other servers unaffected. */
  private async upstream<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      if (error instanceof UpstreamUnavailable) throw new McpError(McpErrorCode.UpstreamUnavailable, error.message);
      if (error instanceof AppError && error.code === ErrorCode.ServiceUnavailable) throw new McpError(McpErrorCode.UpstreamUnavailable, error.message);
      throw error;
    }
  }
}

/** The exchange the request handing a message to a handler carries (see `serve`). */
function exchangeOf(auth: AuthInfo | undefined): McpExchange {
  const exchange = auth?.extra?.exchange as McpExchange | undefined;
  if (exchange === undefined) throw new Error('MCP message without its request: the transport did not pass auth on');
  return exchange;
}

/** The approval a retried tools/call presents in its `_meta` (docs/approvals.md). */
function approvalIdOf(meta: Record<string, unknown> | undefined): string | undefined {
  const approvalId = meta?.approvalId;
  return typeof approvalId === 'string' && approvalId !== '' ? approvalId : undefined;
}
