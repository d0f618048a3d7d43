import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { call } from './support/http-client';
import { auditEntries, createAgent, TestAgent } from './support/org-fixtures';
import { startMcpUpstream, TestMcpServer } from './support/mcp-upstream';
import { IssuerKey, startOidcIssuer, TestOidcIssuer } from './support/oidc-issuer';
import { createOrganization, startGateway, TEST_PUBLIC_URL, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * MCP authorization as standard clients expect it (docs/mcp.md, "Authorization"): with
 * OIDC_ISSUER set, an identity provider's token whose audience is the MCP server's URL (RFC 8707)
 * acts as the agent its managed-identity client is registered with; a token of the provider for
 * another audience is refused, as is one of a client registered with no agent.
 */

const AUDIENCE = 'api://agent-governance';
const RESOURCE = `${TEST_PUBLIC_URL}/mcp/files`;

let issuer: TestOidcIssuer;
let key: IssuerKey;
let upstream: TestMcpServer;
let gateway: TestGateway;
let org: TestOrganization;
let agent: TestAgent;
let scratch: string;

beforeAll(async () => {
  issuer = await startOidcIssuer();
  key = await issuer.newKey('mcp-key');
  issuer.publish(key);
  upstream = await startMcpUpstream([{ name: 'read_file', description: 'Reads a file', inputSchema: { type: 'object' } }]);
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-mcp-auth-'));
  const serversFile = path.join(scratch, 'mcp-servers.yaml');
  fs.writeFileSync(serversFile, `servers:\n  - name: files\n    url: ${upstream.url}\n`);
  gateway = await startGateway({ MCP_SERVERS: serversFile, OIDC_ISSUER: issuer.url, OIDC_AUDIENCE: AUDIENCE, OIDC_JWKS_COOLDOWN: '1s' });
  org = await createOrganization(gateway, 'enterprise', 'MCP authorization org');
  agent = await createAgent(gateway, org, { name: 'mcp-managed', trustTier: 'verified' });
  for (const [clientId, agentId] of [
    ['mcp-worker', agent.id],
    ['no-agent-worker', undefined],
  ] as const) {
    const proofToken = await issuer.sign(key, { sub: `mi-${clientId}`, azp: clientId, aud: AUDIENCE });
    const registered = await call(gateway.url, 'POST', '/admin/oidc-clients', { adminToken: org.adminToken, body: { clientId, proofToken, ...(agentId === undefined ? {} : { agentId }) } });
    expect(registered.status).toBe(201);
  }
});

afterAll(async () => {
  await gateway.close();
  await Promise.all([upstream.close(), issuer.close()]);
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: 'desktop-client', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp/files`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

it('names the identity provider in the resource metadata', async () => {
  const metadata = await fetch(`${gateway.url}/.well-known/oauth-protected-resource/mcp/files`);
  expect(await metadata.json()).toMatchObject({ resource: RESOURCE, authorization_servers: [issuer.url] });
});

it('takes a provider token whose audience is the MCP server’s URL as the agent its client is registered with', async () => {
  const client = await connect(await issuer.sign(key, { sub: 'mi-mcp-worker', azp: 'mcp-worker', aud: RESOURCE }));
  await client.callTool({ name: 'read_file', arguments: { path: '/tmp/a' } });
  const [entry] = await auditEntries(gateway, org, `agentId=${agent.id}&source=mcp&action=call:files/read_file`, 1);
  expect(entry).toMatchObject({ decision: 'allow', agentId: agent.id });
  await client.close();
});

it('refuses a provider token for another audience, and one of a client registered with no agent', async () => {
  for (const token of [
    await issuer.sign(key, { sub: 'mi-mcp-worker', azp: 'mcp-worker', aud: AUDIENCE }),
    await issuer.sign(key, { sub: 'mi-mcp-worker', azp: 'mcp-worker', aud: `${TEST_PUBLIC_URL}/mcp/other` }),
    await issuer.sign(key, { sub: 'mi-no-agent-worker', azp: 'no-agent-worker', aud: RESOURCE }),
  ]) {
    const response = await fetch(`${gateway.url}/mcp/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toContain('resource_metadata=');
  }
});
