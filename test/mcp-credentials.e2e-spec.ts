import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { call, TestResponse } from './support/http-client';
import { auditEntries, createAgent, TestAgent } from './support/org-fixtures';
import { GuardedMcpServer, startGuardedMcpUpstream } from './support/guarded-mcp-upstream';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { eventually } from './support/processes';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * Upstream credentials on MCP (docs/security.md "Upstream credentials", docs/mcp.md): a real MCP
 * server (the official SDK's, sessions, event streams, the GET stream and DELETE) that requires
 * an API key the agents never hold, behind the gateway with each organization's credential
 * stored for it.
 */

const secret = (label: string) => `sk_${label}_${randomBytes(18).toString('hex')}`;
const KEY_A = secret('org_a');
const KEY_A_ROTATED = secret('org_a_rotated');
const KEY_B = secret('org_b');
const SECRETS = [KEY_A, KEY_A_ROTATED, KEY_B];
/** The servers file's own header for the server: a stored credential takes its place. */
const FILE_KEY = 'from-the-servers-file';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-mcp-credentials-'));
const keyFile = path.join(scratch, 'credentials.key');
fs.writeFileSync(keyFile, randomBytes(32).toString('base64'));

/** Everything the gateway logged (debug, every request) and every answer the test got. */
const logs: string[] = [];
const seen: string[] = [];
let database: OwnDatabase;
let upstream: GuardedMcpServer;
let gateway: TestGateway;
let orgA: TestOrganization;
let orgB: TestOrganization;
let orgC: TestOrganization;
let agentA: TestAgent;
let agentB: TestAgent;
let agentC: TestAgent;
let credentialA: string;
let credentialB: string;
let redirecting: http.Server;
const redirected: string[] = [];

async function answer(response: Promise<TestResponse>): Promise<TestResponse> {
  const got = await response;
  seen.push(got.text, JSON.stringify([...got.headers.entries()]));
  return got;
}

/** A fetch that keeps a copy of every answer's headers and body (event streams too, once they end). */
const recordingFetch: FetchLike = async (url, init) => {
  const response = await fetch(url, init);
  seen.push(JSON.stringify([...response.headers.entries()]));
  void response
    .clone()
    .text()
    .then((text) => seen.push(text))
    .catch(() => undefined);
  return response;
};

async function connect(url: string, headers: Record<string, string>): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'e2e-credentials-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers }, fetch: recordingFetch });
  await client.connect(transport);
  return { client, transport };
}

/** As an agent connects through the gateway: its agent token, and a key of its own guess that must never reach the server. */
const through = (agent: TestAgent) => connect(`${gateway.url}/mcp/vault`, { authorization: `Bearer ${agent.token}`, 'x-api-key': 'sk_guessed_by_the_agent' });

function textOf(result: Awaited<ReturnType<Client['callTool']>>): string {
  return (result.content as Array<{ text: string }>)[0].text;
}

beforeAll(async () => {
  database = await ownDatabase();
  upstream = await startGuardedMcpUpstream({
    tools: [{ name: 'whoami', description: 'Says whose key the call came with', inputSchema: { type: 'object', properties: {} } }],
    guard: (request) => {
      const key = request.headers['x-api-key'];
      if (key === KEY_A) return 'org-a';
      if (key === KEY_A_ROTATED) return 'org-a (rotated key)';
      if (request.headers.authorization === `Bearer ${KEY_B}`) return 'org-b';
      return undefined;
    },
    call: (_params, caller) => ({ content: [{ type: 'text', text: `called by ${caller}` }] }),
  });
  // A server that redirects every request to the vault's own URL (same origin: the SDK alone would follow it, credential and all).
  redirecting = http.createServer((request, response) => {
    redirected.push(request.method ?? 'GET');
    request.resume();
    response.writeHead(307, { location: upstream.url }).end();
  });
  await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
  const movedUrl = `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}/mcp`;
  const serversFile = path.join(scratch, 'mcp-servers.yaml');
  fs.writeFileSync(serversFile, `servers:\n  - name: vault\n    url: ${upstream.url}\n    headers:\n      X-Api-Key: ${FILE_KEY}\n  - name: moved\n    url: ${movedUrl}\n`);
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  gateway = await startGateway({ DATABASE_URL: database.url, MCP_SERVERS: serversFile, CREDENTIALS_KEY_FILE: keyFile, LOG_REQUESTS: 'true', LOG_LEVEL: 'debug' }, pino({ level: 'debug' }, sink));
  orgA = await createOrganization(gateway, 'enterprise', 'MCP credentials org A');
  orgB = await createOrganization(gateway, 'enterprise', 'MCP credentials org B');
  orgC = await createOrganization(gateway, 'enterprise', 'MCP credentials org C');
  agentA = await createAgent(gateway, orgA, { name: 'vault-a', trustTier: 'trusted' });
  agentB = await createAgent(gateway, orgB, { name: 'vault-b', trustTier: 'trusted' });
  agentC = await createAgent(gateway, orgC, { name: 'vault-c', trustTier: 'trusted' });
}, 120_000);

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
  redirecting?.closeAllConnections();
  await new Promise((resolve) => redirecting?.close(resolve));
  await database?.dispose();
  fs.rmSync(scratch, { recursive: true, force: true });
});

describe('MCP upstream credentials', () => {
  it('refuses a credential for an MCP server that does not exist, 400 naming it', async () => {
    const refused = await answer(call(gateway.url, 'POST', '/admin/credentials', { adminToken: orgA.adminToken, body: { mcpServer: 'no-such-server', type: 'header', name: 'X-Api-Key', value: KEY_A } }));
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/No MCP server "no-such-server": MCP_SERVERS names vault/);
  });

  it('stores one credential per organization for the server', async () => {
    const a = await answer(call(gateway.url, 'POST', '/admin/credentials', { adminToken: orgA.adminToken, body: { mcpServer: 'vault', type: 'header', name: 'X-Api-Key', value: KEY_A } }));
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ mcpServer: 'vault', route: null, type: 'header', name: 'X-Api-Key' });
    credentialA = a.body.id as string;
    const b = await answer(call(gateway.url, 'POST', '/admin/credentials', { adminToken: orgB.adminToken, body: { mcpServer: 'vault', type: 'bearer', value: KEY_B } }));
    expect(b.status).toBe(201);
    credentialB = b.body.id as string;
  });

  it('lets the agent’s direct call with a guessed key fail', async () => {
    await expect(connect(upstream.url, { 'x-api-key': 'sk_guessed_by_the_agent' })).rejects.toThrow(/bad api key/);
  });

  it('adds the organization’s credential to every request of the session, initialize, messages, the GET stream and DELETE, and forwards none of the agent’s', async () => {
    const before = upstream.requests.length;
    const { client, transport } = await through(agentA);
    expect(textOf(await client.callTool({ name: 'whoami', arguments: {} }))).toBe('called by org-a');
    const upstreamSession = upstream.requests[upstream.requests.length - 1].headers['mcp-session-id'];
    await transport.terminateSession();
    await client.close();
    await eventually(async () => upstream.requests.slice(before).some((request) => request.method === 'DELETE'), 10_000, 'the upstream session’s DELETE');
    const sent = upstream.requests.slice(before);
    expect(new Set(sent.map((request) => request.method))).toEqual(new Set(['POST', 'GET', 'DELETE']));
    for (const request of sent) {
      expect(request.caller).toBe('org-a');
      expect(request.headers['x-api-key']).toBe(KEY_A);
      expect(request.headers.authorization).toBeUndefined();
    }
    expect(sent.filter((request) => request.method !== 'POST' || request.headers['mcp-session-id'] !== undefined).every((request) => request.headers['mcp-session-id'] === upstreamSession)).toBe(true);
  });

  it('gives each organization its own credential, and one without any gets none of theirs', async () => {
    const a = await through(agentA);
    const b = await through(agentB);
    expect(textOf(await a.client.callTool({ name: 'whoami', arguments: {} }))).toBe('called by org-a');
    expect(textOf(await b.client.callTool({ name: 'whoami', arguments: {} }))).toBe('called by org-b');
    const before = upstream.requests.length;
    // Organization C stored nothing: the servers file's own header goes, which the server refuses.
    await expect(through(agentC)).rejects.toThrow(/MCP server vault|401/);
    const refused = upstream.requests.slice(before);
    expect(refused.length).toBeGreaterThan(0);
    for (const request of refused) {
      expect(request.caller).toBeUndefined();
      expect(request.headers['x-api-key']).toBe(FILE_KEY);
      expect(request.headers.authorization).toBeUndefined();
    }
    await Promise.all([a.client.close(), b.client.close()]);
  });

  it('names the credential’s id in the audit entry of each call', async () => {
    const [a] = await auditEntries(gateway, orgA, 'action=call:vault/whoami', 1);
    expect(a.details).toMatchObject({ credentialId: credentialA });
    const [b] = await auditEntries(gateway, orgB, 'action=call:vault/whoami', 1);
    expect(b.details).toMatchObject({ credentialId: credentialB });
    for (const org of [orgA, orgB]) seen.push((await answer(call(gateway.url, 'GET', '/admin/audit?limit=1000', { adminToken: org.adminToken }))).text);
  });

  it('applies a rotation to an open session at its next request', async () => {
    const { client } = await through(agentA);
    expect(textOf(await client.callTool({ name: 'whoami', arguments: {} }))).toBe('called by org-a');
    const rotated = await answer(call(gateway.url, 'POST', `/admin/credentials/${credentialA}/rotate`, { adminToken: orgA.adminToken, body: { value: KEY_A_ROTATED } }));
    expect(rotated.status).toBe(200);
    expect(textOf(await client.callTool({ name: 'whoami', arguments: {} }))).toBe('called by org-a (rotated key)');
    await client.close();
  });

  it('neither follows nor relays a server’s redirect: an upstream error, logged, the credential sent nowhere else', async () => {
    const stored = await answer(call(gateway.url, 'POST', '/admin/credentials', { adminToken: orgA.adminToken, body: { mcpServer: 'moved', type: 'header', name: 'X-Api-Key', value: KEY_A } }));
    expect(stored.status).toBe(201);
    const before = upstream.requests.length;
    await expect(connect(`${gateway.url}/mcp/moved`, { authorization: `Bearer ${agentA.token}` })).rejects.toThrow(/MCP server moved .*HTTP 307, a redirect, which the gateway does not follow/);
    expect(redirected.length).toBeGreaterThan(0);
    expect(upstream.requests.length).toBe(before);
    expect(logs.join('')).toMatch(/"server":"moved","status":307,"msg":"MCP server answered a redirect; not followed"/);
  });

  it('never shows a secret in an answer, an audit entry or a log line', async () => {
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(logs.length).toBeGreaterThan(20);
    // Organization C's refused attempt was logged, with the server's answer.
    expect(logs.join('')).toMatch(/"server":"vault","msg":"MCP upstream transport error"/);
    for (const value of SECRETS) {
      for (const text of [...seen, ...logs]) expect(text.includes(value)).toBe(false);
    }
  });
});
