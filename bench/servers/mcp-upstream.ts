/**
 * The MCP bench's upstream: the official SDK's server over Streamable HTTP (stateless, JSON
 * answers), one tool that echoes its arguments. Forked by the bench; reports its port over IPC.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ChildMessage } from './messages';

const TOOL = { name: 'lookup', description: 'Looks an order up', inputSchema: { type: 'object', properties: { order: { type: 'string' } } } };

function main(): void {
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
      const mcp = new Server({ name: 'bench-upstream', version: '1.0.0' }, { capabilities: { tools: {} } });
      mcp.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [TOOL] }));
      mcp.setRequestHandler(CallToolRequestSchema, (call) => ({ content: [{ type: 'text', text: JSON.stringify(call.params.arguments ?? {}) }] }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      response.on('close', () => {
        void transport.close();
        void mcp.close();
      });
      void mcp.connect(transport).then(() => transport.handleRequest(request, response, body));
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => send({ type: 'listening', port: (server.address() as AddressInfo).port }));
  process.on('disconnect', () => process.exit(0));
}

function send(message: ChildMessage): void {
  process.send?.(message);
}

main();
