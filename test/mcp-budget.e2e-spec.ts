import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { call } from './support/http-client';
import { auditEntries, createAgent, TestAgent } from './support/org-fixtures';
import { mcpError, startMcpUpstream, TestMcpServer } from './support/mcp-upstream';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * A spent budget at the MCP gateway (docs/mcp.md, docs/policies.md "Budgets"): refused as the
 * proxy and /v1/check refuse it, a "try again later" with the budget and when to retry, not a
 * policy's denial: JSON-RPC error -32029 with `error: "budget_exceeded"`, `retry_after` and
 * `limit`, recorded with status 429.
 */

const COMPLETE: Tool = { name: 'complete', description: 'Asks a model', inputSchema: { type: 'object', properties: { prompt: { type: 'string' } } } };
const SPEND = 'name: model-spend\nmatch: { action: "call:llm/complete" }\nrules:\n  - name: daily\n    condition: budget(per_agent, 10, 1d)\n    action: deny\n    cost: 4\n    reason: The daily model budget is spent\n';

let upstream: TestMcpServer;
let gateway: TestGateway;
let org: TestOrganization;
let agent: TestAgent;
let scratch: string;

beforeAll(async () => {
  upstream = await startMcpUpstream([COMPLETE]);
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-mcp-budget-'));
  const serversFile = path.join(scratch, 'mcp-servers.yaml');
  fs.writeFileSync(serversFile, `servers:\n  - name: llm\n    url: ${upstream.url}\n`);
  gateway = await startGateway({ MCP_SERVERS: serversFile });
  org = await createOrganization(gateway, 'enterprise', 'MCP budget org');
  const put = await call(gateway.url, 'PUT', '/admin/policies/model-spend', { adminToken: org.adminToken, body: SPEND, headers: { 'content-type': 'application/yaml' } });
  expect([200, 201]).toContain(put.status);
  agent = await createAgent(gateway, org, { name: 'mcp-spender' });
});

afterAll(async () => {
  await gateway.close();
  await upstream.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

it('answers a call past its budget with -32029 budget_exceeded, retry_after and the limit, recorded as a 429', async () => {
  const client = new Client({ name: 'e2e-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/llm`), { requestInit: { headers: { authorization: `Bearer ${agent.token}` } } }));
  await client.callTool({ name: 'complete', arguments: { prompt: 'one' } });
  await client.callTool({ name: 'complete', arguments: { prompt: 'two' } });
  const forwarded = upstream.calls.length;

  const error = await mcpError(client.callTool({ name: 'complete', arguments: { prompt: 'three' } }));
  expect(error.code).toBe(-32029);
  expect(error.data).toEqual({ error: 'budget_exceeded', retry_after: expect.any(Number), limit: '10/1d per_agent budget', policy: 'model-spend', trace_id: expect.any(String) });
  expect((error.data as { retry_after: number }).retry_after).toBeGreaterThan(0);
  expect(upstream.calls.length).toBe(forwarded);

  const [refused] = await auditEntries(gateway, org, `agentId=${agent.id}&source=mcp&decision=deny`, 1);
  expect(refused).toMatchObject({ action: 'call:llm/complete', policyName: 'model-spend', status: 429, details: { budget: { limit: '10/1d per_agent budget' } } });
  await client.close();
});
