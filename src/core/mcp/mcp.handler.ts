import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationShutdown, Optional } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { Logger } from 'pino';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';
import { header, requestTraceId } from '../common/raw-request';
import { ServiceHeader } from '../common/service-header';
import { readJsonBody } from '../http/body-reader';
import { contextFromHeaders } from '../http/context-headers';
import { decisionHeaders } from '../http/decision-headers';
import { sendFailure } from '../http/json-route';
import type { LeanRoute } from '../http/lean-routes';
import { sendJson } from '../http/send-json';
import { LOGGER } from '../logging/logging.module';
import { DECISION_TOKENS, DecisionTokenSigner } from '../decision/decision-token';
import { NO_CREDENTIALS, UPSTREAM_CREDENTIALS, UpstreamCredentials } from '../decision/upstream-credentials';
import { MCP_AUTHENTICATION, McpAuthentication } from './mcp-authentication';
import { McpCaller, McpGovernor } from './mcp-governor';
import { McpHostCheck } from './mcp-host-check';
import { McpRelay, RelayDeps } from './mcp-relay';
import { McpServerConfig } from './mcp-server-list';
import { McpSessionTable } from './mcp-session-table';
import { McpUpstreamHttp } from './upstream-http';

const PREFIX = '/mcp/';
/** RFC 9728 protected resource metadata of `/mcp/<name>` (docs/mcp.md, "Authorization"). */
export const RESOURCE_METADATA_PREFIX = '/.well-known/oauth-protected-resource/mcp/';

/** The bounds of MCP sessions (docs/mcp.md, "Sessions"; docs/performance.md). */
export const MCP_SESSION_BOUNDS = { maxSessions: 10_000, maxPerAgent: 32, idleMs: 30 * 60 * 1000 };

/** Settings the MCP endpoints use. */
export const MCP_SETTINGS = Symbol('McpSettings');
export interface McpSettings {
  /** MAX_JSON_BYTES: the largest JSON-RPC body taken. */
  maxJsonBytes: number;
  version: string;
  /** The upstream servers of MCP_SERVERS, by name. */
  servers: ReadonlyMap<string, McpServerConfig>;
  /** PUBLIC_URL, where the process has one: the base of each server's resource URL (RFC 8707, RFC 9728). */
  publicUrl?: string;
  /** MCP_ALLOWED_HOSTS. */
  allowedHosts: readonly string[];
  /** The authorization servers the resource metadata names: OIDC_ISSUER where set. */
  authorizationServers: readonly string[];
}

/**
 * The MCP gateway (docs/mcp.md): `/mcp/<name>` relays MCP Streamable HTTP between the agent and
 * the upstream server MCP_SERVERS names, one upstream session per agent session (McpRelay), and
 * governs what it must (McpGovernor, through DecisionService). Every HTTP request is checked
 * first: Host and Origin (DNS rebinding), the bearer token (a 401 names the resource metadata,
 * so standard clients find the authorization server), the body's bound; a session answers only
 * the agent and server that opened it.
 */
@Injectable()
export class McpHandler implements LeanRoute, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly sessions = new McpSessionTable<McpRelay>(MCP_SESSION_BOUNDS);
  private readonly upstreamHttp = new McpUpstreamHttp();
  private readonly hosts: McpHostCheck;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    @Inject(MCP_SETTINGS) private readonly settings: McpSettings,
    @Inject(MCP_AUTHENTICATION) private readonly authentication: McpAuthentication,
    private readonly governor: McpGovernor,
    @Inject(LOGGER) private readonly logger: Logger,
    @Optional() @Inject(UPSTREAM_CREDENTIALS) private readonly credentials: UpstreamCredentials = NO_CREDENTIALS,
    @Optional() @Inject(DECISION_TOKENS) private readonly tokens: DecisionTokenSigner | null = null,
  ) {
    this.hosts = new McpHostCheck(settings.publicUrl, settings.allowedHosts);
    this.sweeper = setInterval(() => this.sessions.sweep(), 60_000);
    this.sweeper.unref();
  }

  matches(_request: IncomingMessage, path: string): boolean {
    return path.startsWith(PREFIX) || path.startsWith(RESOURCE_METADATA_PREFIX);
  }

  name(path: string): string {
    return path.startsWith(PREFIX) ? '/mcp/*' : '/.well-known/oauth-protected-resource/mcp/*';
  }

  handle(request: IncomingMessage, response: ServerResponse, path: string): void {
    const traceId = requestTraceId(request);
    const served = path.startsWith(PREFIX) ? this.serve(request, response, path.slice(PREFIX.length), traceId) : this.metadata(request, response, path.slice(RESOURCE_METADATA_PREFIX.length));
    served.catch((error: unknown) => this.fail(request, response, traceId, error));
  }

  /** Before the HTTP server closes: it waits for open responses, and a session's event streams stay open until the session ends. */
  beforeApplicationShutdown(): void {
    clearInterval(this.sweeper);
    for (const relay of this.sessions.drain()) relay.end();
  }

  /** Once the HTTP server closed: the upstream connections close after what they still carry (the ended sessions' DELETEs). */
  async onApplicationShutdown(): Promise<void> {
    await this.upstreamHttp.close();
  }

  /** The RFC 9728 metadata of one server's resource: its URL and the authorization servers that issue tokens for it. */
  private async metadata(request: IncomingMessage, response: ServerResponse, name: string): Promise<void> {
    const server = this.serverOf(name);
    this.hosts.check(request);
    sendJson(response, 200, {
      resource: this.resourceUrl(request, server),
      authorization_servers: this.settings.authorizationServers,
      bearer_methods_supported: ['header'],
      resource_name: `${server.name} (MCP, through the agent governance gateway)`,
    });
    return Promise.resolve();
  }

  private async serve(request: IncomingMessage, response: ServerResponse, name: string, traceId: string): Promise<void> {
    const server = this.serverOf(name);
    this.hosts.check(request);
    response.setHeader(ServiceHeader.TraceId, traceId);
    const principal = await this.authentication.authenticate(request.headers.authorization, this.resourceUrl(request, server));
    const body = request.method === 'POST' ? await readJsonBody(request, this.settings.maxJsonBytes) : undefined;
    const caller: McpCaller = { principal, server, traceId, context: contextFromHeaders(request.headers), approvalHeader: header(request, 'x-service-approval') };
    // The SDK hands `auth` to the relay with each message (extra.authInfo): how each HTTP request's caller reaches it.
    (request as IncomingMessage & { auth?: AuthInfo }).auth = { token: '', clientId: principal.agent.id, scopes: [], extra: { caller } };
    const messages = body === undefined ? [] : Array.isArray(body) ? (body as unknown[]) : [body];
    const relay = await this.relayFor(request, response, caller, messages);
    const rulings = await relay.rule(caller, messages);
    caller.rulings = rulings;
    if (rulings.size === 1) this.setDecisionHeaders(response, caller, [...rulings.values()][0]);
    await relay.agent.handleRequest(request, response, body);
  }

  /**
   * The relay a request goes to: its session's (Mcp-Session-Id), a new session's for an
   * `initialize`, else a one-off relay for a client that keeps no session. A session is its
   * opening agent's and server's alone: another's id is answered as unknown.
   */
  private async relayFor(request: IncomingMessage, response: ServerResponse, caller: McpCaller, messages: readonly unknown[]): Promise<McpRelay> {
    const sessionId = request.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const relay = this.sessions.use(sessionId);
      if (relay === undefined || relay.agentId !== caller.principal.agent.id || relay.server.name !== caller.server.name) {
        throw new AppError(ErrorCode.NotFound, 'MCP session not found: initialize a new one');
      }
      return relay;
    }
    if (request.method === 'POST' && messages.some((message) => (message as { method?: unknown } | null)?.method === 'initialize')) return this.openSession(caller);
    return this.oneOff(response, caller);
  }

  private async openSession(caller: McpCaller): Promise<McpRelay> {
    const agent: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: () => this.sessions.add(relay),
      onsessionclosed: () => relay.end(),
    });
    const deps = this.relayDeps(caller);
    const relay: McpRelay = new McpRelay(caller.server, caller, agent, this.upstreamTransport(caller.server, deps), deps, (ended) => this.sessions.remove(ended.id));
    await relay.start();
    return relay;
  }

  /** A client that keeps no session: a relay of its own for this one HTTP request, whose upstream session the gateway opens and ends. */
  private async oneOff(response: ServerResponse, caller: McpCaller): Promise<McpRelay> {
    const agent = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const deps = this.relayDeps(caller);
    const relay = new McpRelay(caller.server, caller, agent, this.upstreamTransport(caller.server, deps), deps, () => undefined);
    response.on('close', () => relay.end());
    await relay.start();
    await relay.initializeUpstream();
    return relay;
  }

  /** The upstream session's transport: every request it sends (initialize, each message, GET streams, DELETE) carries the organization's credential for the server. */
  private upstreamTransport(server: McpServerConfig, deps: RelayDeps): StreamableHTTPClientTransport {
    return new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { ...server.headers } }, fetch: this.upstreamHttp.fetchFor(server.name, deps.credential) });
  }

  /** A session's relay belongs to one agent, so to one organization: the credential it injects is that organization's. */
  private relayDeps(caller: McpCaller): RelayDeps {
    const orgId = caller.principal.agent.orgId;
    const server = caller.server.name;
    return { governor: this.governor, logger: this.logger, version: this.settings.version, credential: () => this.credentials.forMcpServer(orgId, server), tokens: this.tokens };
  }

  private serverOf(name: string): McpServerConfig {
    const server = this.settings.servers.get(name);
    if (server === undefined) throw AppError.notFound('MCP server', name);
    return server;
  }

  /** The URL agents reach the server at (its RFC 8707 resource): PUBLIC_URL's, else the one the request named (its Host already checked). */
  private resourceUrl(request: IncomingMessage, server: McpServerConfig): string {
    const base = this.settings.publicUrl ?? `http://${request.headers.host ?? 'localhost'}`;
    return `${base}${PREFIX}${server.name}`;
  }

  private setDecisionHeaders(response: ServerResponse, caller: McpCaller, ruling: NonNullable<McpCaller['rulings']> extends ReadonlyMap<unknown, infer R> ? R : never): void {
    const decision = 'allowed' in ruling ? ruling.allowed.decision : ruling.decision;
    for (const [name, value] of Object.entries(decisionHeaders(decision, caller.traceId, caller.principal.agent.id))) response.setHeader(name, value);
    if ('pending' in ruling && ruling.pending === true) response.setHeader(ServiceHeader.Decision, 'pending');
  }

  /** A refused HTTP request; a 401 names the resource metadata, as MCP's authorization asks (RFC 9728 section 5.1). */
  private fail(request: IncomingMessage, response: ServerResponse, traceId: string, error: unknown): void {
    const headers: Record<string, string> = { [ServiceHeader.TraceId]: traceId };
    const path = request.url ?? '';
    if (error instanceof AppError && error.code === ErrorCode.Unauthorized && path.startsWith(PREFIX)) {
      const name = path.slice(PREFIX.length).split(/[/?]/)[0];
      const base = this.settings.publicUrl ?? `http://${request.headers.host ?? 'localhost'}`;
      headers['www-authenticate'] = `Bearer resource_metadata="${base}${RESOURCE_METADATA_PREFIX}${name}"`;
    }
    sendFailure(request, response, { traceId, headers, logger: this.logger, what: 'MCP request' }, error);
  }
}
