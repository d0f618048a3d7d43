import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { McpServerConfig } from './mcp-server-list';

/** A server that does not connect or list within this long is reported down (docs/mcp.md). */
const CONNECT_TIMEOUT_MS = 10_000;
/** The longest a tool call may run upstream. */
const CALL_TIMEOUT_MS = 60_000;
/** Pages of tools/list read at most, so a server that pages for ever cannot hold a request. */
const MAX_LIST_PAGES = 50;

/** An upstream that could not be reached or answered in time; the other servers are unaffected. */
export class UpstreamUnavailable extends Error {}

/**
 * The gateway's clients of the upstream MCP servers (the official SDK's Client over Streamable
 * HTTP), one per server, connected on first use and again after any failure. Each server's
 * tools are kept as last listed, so a call finds the definition to check against its pin.
 */
export class McpUpstreams {
  private readonly clients = new Map<string, Promise<Client>>();
  private readonly tools = new Map<string, Map<string, Tool>>();

  constructor(
    private readonly servers: ReadonlyMap<string, McpServerConfig>,
    private readonly version: string,
    private readonly logger: Logger,
  ) {}

  /** The configured server of that name. */
  server(name: string): McpServerConfig | undefined {
    return this.servers.get(name);
  }

  /** Every tool the server lists now (all pages). */
  async listTools(server: McpServerConfig): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const listed = await this.use(server, (client) => client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: CONNECT_TIMEOUT_MS }));
      tools.push(...listed.tools);
      cursor = listed.nextCursor;
      if (cursor === undefined) break;
    }
    this.tools.set(server.name, new Map(tools.map((tool) => [tool.name, tool])));
    return tools;
  }

  /** The tool as the server last listed it, listing again when it is not known. */
  async tool(server: McpServerConfig, name: string): Promise<Tool | undefined> {
    const known = this.tools.get(server.name)?.get(name);
    if (known !== undefined) return known;
    return (await this.listTools(server)).find((tool) => tool.name === name);
  }

  async callTool(server: McpServerConfig, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    return (await this.use(server, (client) => client.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS }))) as CallToolResult;
  }

  async close(): Promise<void> {
    const clients = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(clients.map((client) => client.then((connected) => connected.close()).catch(() => undefined)));
  }

  /** Runs one request on the server's client; a failure of the connection drops the client, so the next request connects afresh. */
  private async use<T>(server: McpServerConfig, request: (client: Client) => Promise<T>): Promise<T> {
    let client: Client;
    try {
      client = await this.client(server);
    } catch (error) {
      throw new UpstreamUnavailable(`MCP server ${server.name} cannot be reached: ${(error as Error).message}`);
    }
    try {
      return await request(client);
    } catch (error) {
      if (isProtocolError(error)) throw error;
      this.drop(server.name, client);
      throw new UpstreamUnavailable(`MCP server ${server.name} did not answer: ${(error as Error).message}`);
    }
  }

  private client(server: McpServerConfig): Promise<Client> {
    const existing = this.clients.get(server.name);
    if (existing !== undefined) return existing;
    const connecting = this.connect(server);
    this.clients.set(server.name, connecting);
    connecting.catch(() => this.clients.delete(server.name));
    return connecting;
  }

  private async connect(server: McpServerConfig): Promise<Client> {
    const client = new Client({ name: 'agent-governance-gateway', version: this.version });
    const transport = new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { ...server.headers } } });
    client.onerror = (error) => this.logger.debug({ err: error, server: server.name }, 'MCP upstream transport error');
    await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
    return client;
  }

  private drop(name: string, client: Client): void {
    void this.clients.get(name)?.then((current) => {
      if (current !== client) return;
      this.clients.delete(name);
      void client.close().catch(() => undefined);
    });
  }
}

/** The SDK's codes for a connection that closed or a request that timed out. */
const CONNECTION_CODES: ReadonlySet<number> = new Set([-32000, -32001]);

/** A JSON-RPC error the server answered (the tool refused its arguments, say): the connection is fine. */
function isProtocolError(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'number' && !CONNECTION_CODES.has(code);
}
