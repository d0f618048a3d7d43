import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { getEventListeners } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import { McpUpstreamHttp } from './upstream-http';

/** A real HTTP server on loopback whose handler a test sets. */
async function serve(handler: http.RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The official SDK's MCP server, one session per `initialize`, answering on event streams: a tool that reports progress. */
async function sdkServer(): Promise<{ url: string; close(): Promise<void> }> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  return serve((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
      const id = request.headers['mcp-session-id'];
      const known = typeof id === 'string' ? transports.get(id) : undefined;
      if (known !== undefined) return void known.handleRequest(request, response, body);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (sessionId) => void transports.set(sessionId, transport) });
      const server = new Server({ name: 'upstream-http-spec', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: 'count', inputSchema: { type: 'object', properties: { to: { type: 'number' } } } }] }));
      server.setRequestHandler(CallToolRequestSchema, async (call, extra) => {
        const to = Number(call.params.arguments?.to);
        for (let step = 1; step <= to; step++) {
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: call.params._meta?.progressToken ?? 0, progress: step, total: to } });
        }
        return { content: [{ type: 'text', text: `counted to ${to}` }] };
      });
      void server.connect(transport).then(() => transport.handleRequest(request, response, body));
    });
  });
}

describe('McpUpstreamHttp', () => {
  const upstreamHttp = new McpUpstreamHttp();
  afterAll(() => upstreamHttp.close());

  it('carries the official SDK client transport: a session, event-stream answers, progress and its end', async () => {
    const upstream = await sdkServer();
    const client = new Client({ name: 'spec', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(upstream.url), { fetch: upstreamHttp.fetch });
    await client.connect(transport);
    expect(transport.sessionId).toEqual(expect.any(String));
    const progress: number[] = [];
    const result = await client.callTool({ name: 'count', arguments: { to: 3 } }, undefined, { onprogress: (update) => progress.push(update.progress) });
    expect(result.content).toEqual([{ type: 'text', text: 'counted to 3' }]);
    expect(progress).toEqual([1, 2, 3]);
    await transport.terminateSession();
    await client.close();
    await upstream.close();
  });

  it('leaves no listener on the session’s signal once a request is over, however many it made', async () => {
    const upstream = await serve((request, response) => {
      request.resume();
      request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":1,"result":{}}'));
    });
    const session = new AbortController();
    let most = 0;
    for (let sent = 0; sent < 200; sent++) {
      const response = await upstreamHttp.fetch(upstream.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', signal: session.signal });
      expect(await response.json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
      most = Math.max(most, getEventListeners(session.signal, 'abort').length);
    }
    // Node's fetch leaves one a request until a full collection: 200 here.
    expect(most).toBeLessThanOrEqual(1);
    await waitFor(() => getEventListeners(session.signal, 'abort').length === 0);
    await upstream.close();
  });

  it('ends what is in flight when the session aborts: a request waiting for its answer, and an event stream being read', async () => {
    const closed: string[] = [];
    const upstream = await serve((request, response) => {
      request.resume();
      request.on('close', () => closed.push(request.method!));
      if (request.method === 'GET') response.writeHead(200, { 'content-type': 'text/event-stream' }).write('data: {"jsonrpc":"2.0","method":"ping"}\n\n');
    });
    const session = new AbortController();
    const stream = await upstreamHttp.fetch(upstream.url, { method: 'GET', signal: session.signal });
    const reader = stream.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('"method":"ping"');
    const waiting = upstreamHttp.fetch(upstream.url, { method: 'POST', body: '{}', signal: session.signal });
    await new Promise((resolve) => setTimeout(resolve, 100));
    session.abort(new Error('the session ended'));
    await expect(waiting).rejects.toThrow();
    await expect(reader.read()).rejects.toThrow();
    await waitFor(() => closed.length === 2);
    expect(closed.sort()).toEqual(['GET', 'POST']);
    await upstream.close();
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let tries = 0; !condition(); tries++) {
    if (tries === 100) throw new Error('the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
