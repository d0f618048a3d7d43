import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { call } from './support/http-client';
import { mcpError, startMcpUpstream, TestMcpServer } from './support/mcp-upstream';
import { auditEntries, createAgent, TestAgent } from './support/org-fixtures';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * The three-step attack through the MCP gateway, with the official SDK as client and as the
 * upstream server: an MCP session is the policy session (docs/policies.md "Sessions").
 */

const tool = (name: string, description: string): Tool => ({ name, description, inputSchema: { type: 'object', properties: { q: { type: 'string' } } } });
const TOOLS = [tool('read_customers', 'Reads customer records'), tool('fetch_url', 'Fetches a web page'), tool('send_email', 'Sends an email')];

const POLICY = `name: mcp-exfiltration
match: { plugin: crm }
rules:
  - name: private
    condition: function == "read_customers"
    action: label
    labels: [private_data]
    reason: Customer records were read
  - name: untrusted
    condition: function == "fetch_url"
    action: label
    labels: [untrusted_content]
    reason: A web page was fetched
  - name: no-way-out
    condition: function == "send_email" and session.labels.has("private_data") and session.labels.has("untrusted_content")
    action: deny
    reason: Private data and untrusted content in one session; nothing leaves by mail
`;

let upstream: TestMcpServer;
let gateway: TestGateway;
let org: TestOrganization;
let agent: TestAgent;
let scratch: string;

beforeAll(async () => {
  upstream = await startMcpUpstream(TOOLS);
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-mcp-session-'));
  const serversFile = path.join(scratch, 'mcp-servers.yaml');
  fs.writeFileSync(serversFile, `servers:\n  - name: crm\n    url: ${upstream.url}\n`);
  gateway = await startGateway({ MCP_SERVERS: serversFile });
  org = await createOrganization(gateway, 'enterprise', 'MCP session org');
  const put = await call(gateway.url, 'PUT', '/admin/policies/mcp-exfiltration', { adminToken: org.adminToken, body: POLICY, headers: { 'content-type': 'application/yaml' } });
  expect([200, 201]).toContain(put.status);
  agent = await createAgent(gateway, org, { name: 'mcp-mailer' });
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function connect(): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'e2e-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/crm`), { requestInit: { headers: { authorization: `Bearer ${agent.token}` } } });
  await client.connect(transport);
  return { client, transport };
}

it('denies send_email at the third step of one MCP session, and lets a fresh session mail', async () => {
  const { client, transport } = await connect();
  await client.callTool({ name: 'read_customers', arguments: { q: 'all' } });
  await client.callTool({ name: 'send_email', arguments: { q: 'hello' } });
  await client.callTool({ name: 'fetch_url', arguments: { q: 'https://example.test/page' } });
  const refused = await mcpError(client.callTool({ name: 'send_email', arguments: { q: 'the customer list' } }));
  expect(refused.message).toContain('Private data and untrusted content in one session; nothing leaves by mail');
  expect(upstream.calls.filter((received) => received.name === 'send_email')).toHaveLength(1);

  const fresh = await connect();
  const mailed = await fresh.client.callTool({ name: 'send_email', arguments: { q: 'hello again' } });
  expect(mailed.isError).toBeFalsy();

  const [denied] = await auditEntries(gateway, org, `agentId=${agent.id}&source=mcp&decision=deny`, 1);
  expect(denied.details).toMatchObject({ session: { id: transport.sessionId, labels: ['private_data', 'untrusted_content'] } });
  await Promise.all([client.close(), fresh.client.close()]);
});
