import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { call } from './support/http-client';
import { auditEntries, createAgent, TestAgent } from './support/org-fixtures';
import { mcpError } from './support/mcp-upstream';
import { ServerEverything, startServerEverything } from './support/server-everything';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * The MCP gateway as a faithful relay (docs/mcp.md, "The relay"), against the reference server
 * of every MCP feature (`@modelcontextprotocol/server-everything`, Streamable HTTP on loopback)
 * and the official SDK's client: what the server declares and sends reaches the agent
 * unchanged, each agent session has an upstream session of its own, and what the gateway
 * governs is decided and audited.
 */

const POLICIES = [
  ['everything-prompts', 'name: everything-prompts\nmatch: { action: "prompt:everything/args-prompt" }\nrules:\n  - condition: "true"\n    action: deny\n    reason: No argument prompts\n'],
  [
    'everything-reads',
    'name: everything-reads\nmatch: { action: "read:everything/*" }\nrules:\n  - condition: args.uri contains "architecture"\n    action: deny\n    reason: The architecture stays private\n',
  ],
  ['everything-sampling', 'name: everything-sampling\nmatch: { action: "sample:everything" }\nrules:\n  - condition: agent.trust_tier < trusted\n    action: deny\n    reason: Only trusted agents lend their model to a tool server\n'],
];

let everything: ServerEverything;
let gateway: TestGateway;
let org: TestOrganization;
let otherOrg: TestOrganization;
let verified: TestAgent;
let trusted: TestAgent;
let stranger: TestAgent;
let scratch: string;

beforeAll(async () => {
  everything = await startServerEverything();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-mcp-relay-'));
  const serversFile = path.join(scratch, 'mcp-servers.yaml');
  fs.writeFileSync(serversFile, `servers:\n  - name: everything\n    url: ${everything.url}\n`);
  gateway = await startGateway({ MCP_SERVERS: serversFile });
  org = await createOrganization(gateway, 'enterprise', 'MCP relay org');
  otherOrg = await createOrganization(gateway, 'enterprise', 'MCP relay other org');
  for (const [name, yaml] of POLICIES) {
    const put = await call(gateway.url, 'PUT', `/admin/policies/${name}`, { adminToken: org.adminToken, body: yaml, headers: { 'content-type': 'application/yaml' } });
    expect([200, 201]).toContain(put.status);
  }
  verified = await createAgent(gateway, org, { name: 'relay-verified', trustTier: 'verified' });
  trusted = await createAgent(gateway, org, { name: 'relay-trusted', trustTier: 'trusted' });
  stranger = await createAgent(gateway, otherOrg, { name: 'relay-stranger', trustTier: 'trusted' });
}, 120_000);

afterAll(async () => {
  await gateway.close();
  await everything.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

type Capabilities = ConstructorParameters<typeof Client>[1];

async function connectTo(url: string, token?: string, options?: Capabilities): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'e2e-relay-agent', version: '1.0.0' }, options);
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  return { client, transport };
}

const through = (token: string, options?: Capabilities) => connectTo(`${gateway.url}/mcp/everything`, token, options);

describe('a faithful relay', () => {
  it('declares the upstream’s own capabilities, server info and instructions', async () => {
    const direct = await connectTo(everything.url);
    const relayed = await through(verified.token);
    expect(relayed.client.getServerCapabilities()).toEqual(direct.client.getServerCapabilities());
    expect(relayed.client.getServerCapabilities()).toMatchObject({ prompts: expect.any(Object), resources: expect.any(Object), logging: expect.any(Object), completions: expect.any(Object) });
    expect(relayed.client.getInstructions()).toBe(direct.client.getInstructions());
    expect(relayed.client.getInstructions()?.length).toBeGreaterThan(0);
    expect(relayed.client.getServerVersion()).toEqual(direct.client.getServerVersion());
    await Promise.all([direct.client.close(), relayed.client.close()]);
  });

  it('relays prompts, resources, templates, completion, logging and ping', async () => {
    const { client } = await through(verified.token);
    await client.ping();
    const prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
    expect(prompts).toEqual(expect.arrayContaining(['simple-prompt', 'completable-prompt']));
    const simple = await client.getPrompt({ name: 'simple-prompt' });
    expect(simple.messages.length).toBeGreaterThan(0);
    const resources = (await client.listResources()).resources;
    const document = resources.find((resource) => resource.uri.includes('features'))!;
    const read = await client.readResource({ uri: document.uri });
    expect(read.contents[0]).toMatchObject({ uri: document.uri });
    expect((await client.listResourceTemplates()).resourceTemplates.length).toBeGreaterThan(0);
    const completion = await client.complete({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'E' } });
    expect(completion.completion.values).toEqual(expect.arrayContaining(['Engineering']));
    await client.setLoggingLevel('debug');
    await client.close();
  });

  it('relays progress notifications of a long call, with the call’s _meta', async () => {
    const { client } = await through(verified.token);
    const progress: number[] = [];
    const result = await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 3 } }, undefined, { onprogress: (update) => progress.push(update.progress) });
    expect(result.isError).not.toBe(true);
    expect(progress).toEqual([1, 2, 3]);
    await client.close();
  });

  it('gives each agent session an upstream session of its own: two agents of two organizations never meet', async () => {
    const mine = await through(trusted.token);
    const theirs = await through(stranger.token);
    const started = (await mine.client.callTool({ name: 'toggle-simulated-logging', arguments: {} })).content as Array<{ text: string }>;
    expect(started[0].text).toMatch(/^Started simulated/);
    const messages: unknown[] = [];
    theirs.client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => void messages.push(notification));
    const other = (await theirs.client.callTool({ name: 'toggle-simulated-logging', arguments: {} })).content as Array<{ text: string }>;
    // Their toggle starts logging for their own session: it does not stop mine.
    expect(other[0].text).toMatch(/^Started simulated/);
    const sessionOf = (text: string) => /for session (\S+)/.exec(text)?.[1];
    expect(sessionOf(other[0].text)).not.toBe(sessionOf(started[0].text));
    expect(mine.transport.sessionId).not.toBe(theirs.transport.sessionId);
    await Promise.all([mine.client.close(), theirs.client.close()]);
  });

  it('relays the server’s sampling request to an agent that may lend its model, and refuses it, audited, for one that may not', async () => {
    const asTrusted = await through(trusted.token, { capabilities: { sampling: {} } });
    asTrusted.client.setRequestHandler(CreateMessageRequestSchema, () => ({ role: 'assistant', content: { type: 'text', text: 'sampled by the agent' }, model: 'e2e-model' }));
    const lent = await asTrusted.client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'Say hi', maxTokens: 10 } });
    expect(JSON.stringify(lent.content)).toContain('sampled by the agent');

    const asVerified = await through(verified.token, { capabilities: { sampling: {} } });
    let asked = 0;
    asVerified.client.setRequestHandler(CreateMessageRequestSchema, () => {
      asked++;
      return { role: 'assistant', content: { type: 'text', text: 'should not be asked' }, model: 'e2e-model' };
    });
    const refused = await asVerified.client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'Say hi', maxTokens: 10 } }).catch((error: Error) => error);
    expect(asked).toBe(0);
    expect(JSON.stringify(refused)).not.toContain('should not be asked');
    const [entry] = await auditEntries(gateway, org, `agentId=${verified.id}&source=mcp&decision=deny&action=sample:everything`, 1);
    expect(entry).toMatchObject({ action: 'sample:everything', decision: 'deny', policyName: 'everything-sampling', status: 403 });
    await Promise.all([asTrusted.client.close(), asVerified.client.close()]);
  });

  it('relays the server’s elicitation request to the agent and its answer back', async () => {
    const { client } = await through(trusted.token, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'decline' }));
    const result = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
    expect(JSON.stringify(result.content)).toMatch(/decline/i);
    const [entry] = await auditEntries(gateway, org, `agentId=${trusted.id}&source=mcp&action=elicit:everything`, 1);
    expect(entry).toMatchObject({ decision: 'allow' });
    await client.close();
  });
});

describe('what the gateway governs', () => {
  it('decides prompts/get as prompt:<server>/<name> and leaves a denied prompt out of prompts/list', async () => {
    const { client } = await through(verified.token);
    expect((await client.listPrompts()).prompts.map((prompt) => prompt.name)).not.toContain('args-prompt');
    const error = await mcpError(client.getPrompt({ name: 'args-prompt', arguments: { city: 'Paris' } }));
    expect(error.code).toBe(-32003);
    expect(error.data).toMatchObject({ policy: 'everything-prompts', action: 'prompt:everything/args-prompt' });
    const [entry] = await auditEntries(gateway, org, `agentId=${verified.id}&action=prompt:everything/args-prompt`, 1);
    expect(entry).toMatchObject({ decision: 'deny', source: 'mcp' });
    await client.close();
  });

  it('decides resources/read as read:<server>/<uri>, by the URI', async () => {
    const { client } = await through(verified.token);
    const uri = (await client.listResources()).resources.map((resource) => resource.uri).find((candidate) => candidate.includes('architecture'));
    // A policy that reads args.uri depends on the request: the resource stays listed, its read is decided.
    expect(uri).toBeDefined();
    const error = await mcpError(client.readResource({ uri: uri! }));
    expect(error.data).toMatchObject({ policy: 'everything-reads', action: `read:everything/${uri}` });
    await client.close();
  });

  it('decides and audits a call to a tool the server does not list', async () => {
    const { client } = await through(verified.token);
    const error = await mcpError(client.callTool({ name: 'no-such-tool', arguments: {} }));
    expect(error.data).toMatchObject({ policy: 'tool-pinning', reason: expect.stringContaining('does not list a tool no-such-tool') });
    const [entry] = await auditEntries(gateway, org, `agentId=${verified.id}&action=call:everything/no-such-tool`, 1);
    expect(entry).toMatchObject({ decision: 'deny', source: 'mcp', status: 403 });
    await client.close();
  });

  it('audits a cancelled call as cancelled, with the time it ran, and cancels it upstream', async () => {
    const { client } = await through(verified.token);
    const controller = new AbortController();
    const running = client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 5, steps: 5 } }, undefined, { signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 400));
    controller.abort('changed my mind');
    await expect(running).rejects.toThrow();
    let entry: Awaited<ReturnType<typeof auditEntries>>[number] | undefined;
    for (let tries = 0; entry === undefined && tries < 100; tries++) {
      entry = (await auditEntries(gateway, org, `agentId=${verified.id}&action=call:everything/trigger-long-running-operation`, 1)).find((candidate) => candidate.status === 499);
      if (entry === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(entry).toMatchObject({ decision: 'allow', status: 499 });
    expect(entry!.latencyMs).toBeGreaterThanOrEqual(300);
    expect(entry!.latencyMs).toBeLessThan(4000);
    await client.close();
  });
});

describe('transport security and sessions', () => {
  it('refuses a Host or Origin that is not a name of the gateway (DNS rebinding)', async () => {
    const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
    const headers = { authorization: `Bearer ${verified.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const rebound = await rawPost({ ...headers, host: 'evil.example.com' }, initialize);
    expect(rebound.status).toBe(403);
    expect(rebound.body).toContain('evil.example.com');
    const origin = await rawPost({ ...headers, origin: 'http://evil.example.com' }, initialize);
    expect(origin.status).toBe(403);
  });

  it('answers a request without a token 401 with WWW-Authenticate naming the resource metadata (RFC 9728)', async () => {
    const response = await fetch(`${gateway.url}/mcp/everything`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer resource_metadata="http://gateway.test/.well-known/oauth-protected-resource/mcp/everything"');
    const metadata = await fetch(`${gateway.url}/.well-known/oauth-protected-resource/mcp/everything`);
    expect(metadata.status).toBe(200);
    expect(await metadata.json()).toMatchObject({ resource: 'http://gateway.test/mcp/everything', authorization_servers: ['http://gateway.test'], bearer_methods_supported: ['header'] });
  });

  it('keeps at most 32 sessions per agent: its next initialize ends its least recently used one', async () => {
    const agent = await createAgent(gateway, org, { name: 'relay-many-sessions', trustTier: 'verified' });
    const first = await through(agent.token);
    const others = [];
    for (let index = 0; index < 32; index++) others.push(await through(agent.token));
    await expect(first.client.ping()).rejects.toThrow(/404|not found/i);
    await others.at(-1)!.client.ping();
    await Promise.all([first, ...others].map(({ client }) => client.close()));
  });
});

async function rawPost(headers: Record<string, string>, body: string): Promise<{ status: number; body: string }> {
  const http = await import('node:http');
  const url = new URL(`${gateway.url}/mcp/everything`);
  return new Promise((resolve, reject) => {
    const request = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
    });
    request.on('error', reject);
    request.end(body);
  });
}
