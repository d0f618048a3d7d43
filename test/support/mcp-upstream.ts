import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError, Tool } from '@modelcontextprotocol/sdk/types.js';

/** One tool call the upstream received. */
export interface ReceivedCall {
  name: string;
  arguments: Record<string, unknown>;
  /** Headers of the HTTP request that carried it (the gateway's added headers among them). */
  headers: http.IncomingHttpHeaders;
}

/**
 * A real MCP server (the official SDK's, Streamable HTTP, stateless) standing in for an upstream
 * of MCP_SERVERS. Its tools can be redefined while it runs (a server that changes a tool's
 * description after it was trusted); every call is recorded and answered with an echo.
 */
export interface TestMcpServer {
  url: string;
  tools: Tool[];
  calls: ReceivedCall[];
  close(): Promise<void>;
}

export async function startMcpUpstream(tools: Tool[]): Promise<TestMcpServer> {
  const calls: ReceivedCall[] = [];
  const state = { tools };
  const httpServer = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
      const server = new Server({ name: 'test-upstream', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: state.tools }));
      server.setRequestHandler(CallToolRequestSchema, (call) => {
        calls.push({ name: call.params.name, arguments: call.params.arguments ?? {}, headers: request.headers });
        return { content: [{ type: 'text', text: `${call.params.name} ran with ${JSON.stringify(call.params.arguments ?? {})}` }] };
      });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      response.on('close', () => {
        void transport.close();
        void server.close();
      });
      void server.connect(transport).then(() => transport.handleRequest(request, response, body));
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get tools() {
      return state.tools;
    },
    set tools(next: Tool[]) {
      state.tools = next;
    },
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}

/** The JSON-RPC error a client call ended with; throws when it succeeded or failed otherwise. */
export async function mcpError(promise: Promise<unknown>): Promise<McpError> {
  const error = await promise.then(
    () => new Error('the call succeeded'),
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof McpError)) throw error;
  return error;
}

/** A real MCP server that keeps sessions (the official SDK's, Streamable HTTP), so it can announce a change of its tools. */
export interface StatefulMcpServer extends TestMcpServer {
  /** Sends `notifications/tools/list_changed` on every open session (as a server whose tools changed does). */
  announceToolsChanged(): Promise<void>;
}

export async function startStatefulMcpUpstream(tools: Tool[]): Promise<StatefulMcpServer> {
  const calls: ReceivedCall[] = [];
  const state = { tools };
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: Server }>();
  const httpServer = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
      const id = request.headers['mcp-session-id'];
      const known = typeof id === 'string' ? sessions.get(id) : undefined;
      if (known !== undefined) return void known.transport.handleRequest(request, response, body);
      const server = new Server({ name: 'stateful-test-upstream', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
      server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: state.tools }));
      server.setRequestHandler(CallToolRequestSchema, (call) => {
        calls.push({ name: call.params.name, arguments: call.params.arguments ?? {}, headers: request.headers });
        return { content: [{ type: 'text', text: `${call.params.name} ran with ${JSON.stringify(call.params.arguments ?? {})}` }] };
      });
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => void sessions.set(sessionId, { transport, server }),
        onsessionclosed: (sessionId) => void sessions.delete(sessionId),
      });
      void server.connect(transport).then(() => transport.handleRequest(request, response, body));
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get tools() {
      return state.tools;
    },
    set tools(next: Tool[]) {
      state.tools = next;
    },
    calls,
    announceToolsChanged: async () => {
      await Promise.all([...sessions.values()].map(({ server }) => server.sendToolListChanged()));
    },
    close: () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}
