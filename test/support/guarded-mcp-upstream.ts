import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { CallToolRequest, CallToolRequestSchema, CallToolResult, ListToolsRequestSchema, Tool } from '@modelcontextprotocol/sdk/types.js';

/** One HTTP request the upstream received, accepted or not. */
export interface GuardedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  /** Who `guard` said sent it; undefined when it was refused. */
  caller: string | undefined;
}

export interface GuardedMcpServerOptions {
  tools: Tool[];
  /** Who the request comes from (a label the tools can answer), or undefined to refuse it 401 before MCP reads it. */
  guard(request: http.IncomingMessage): string | undefined;
  /** Answers a tool call of a caller `guard` accepted. */
  call(params: CallToolRequest['params'], caller: string): Promise<CallToolResult> | CallToolResult;
}

/**
 * A real MCP server (the official SDK's, Streamable HTTP, one session per `initialize`, event
 * streams, the GET stream and DELETE) behind an HTTP check of its own, as an upstream that requires
 * an API key or verifies decision tokens: every HTTP request is recorded, and one the guard
 * refuses is answered 401 without reaching MCP.
 */
export interface GuardedMcpServer {
  url: string;
  requests: GuardedRequest[];
  close(): Promise<void>;
}

export async function startGuardedMcpUpstream(options: GuardedMcpServerOptions): Promise<GuardedMcpServer> {
  const requests: GuardedRequest[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const httpServer = http.createServer((request, response) => {
    const caller = options.guard(request);
    requests.push({ method: request.method ?? 'GET', url: request.url ?? '', headers: request.headers, caller });
    if (caller === undefined) {
      request.resume();
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"bad api key"}');
      return;
    }
    // The SDK hands `auth` to the handlers (extra.authInfo): each call learns who sent its own HTTP request.
    (request as http.IncomingMessage & { auth?: AuthInfo }).auth = { token: '', clientId: caller, scopes: [], extra: { caller } };
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
      const id = request.headers['mcp-session-id'];
      const known = typeof id === 'string' ? sessions.get(id) : undefined;
      if (known !== undefined) return void known.handleRequest(request, response, body);
      if (typeof id === 'string') return void response.writeHead(404).end();
      const server = new Server({ name: 'guarded-upstream', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: options.tools }));
      server.setRequestHandler(CallToolRequestSchema, (call, extra) => options.call(call.params, extra.authInfo!.extra!.caller as string));
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => void sessions.set(sessionId, transport),
        onsessionclosed: (sessionId) => void sessions.delete(sessionId),
      });
      void server.connect(transport).then(() => transport.handleRequest(request, response, body));
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}
