import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolRequest } from '@modelcontextprotocol/sdk/types.js';
import { DecisionTokenError, DecisionTokenVerifier, TOOL_CALL_TOKEN_KEY } from '../sdk/typescript/src/index';
import { auditEntries, createAgent, putPolicies, TestAgent } from './support/org-fixtures';
import { GuardedMcpServer, startGuardedMcpUpstream } from './support/guarded-mcp-upstream';
import { mcpError } from './support/mcp-upstream';
import { createOrganization, startGateway, TEST_PUBLIC_URL, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * Decision tokens on MCP tool calls (docs/security.md "Decision tokens"): after an allowed
 * `tools/call` the gateway puts its token in `params._meta["io.agentgov/decision-token"]`, and a
 * real MCP server (the official SDK's) that checks it with the TypeScript SDK's verifier
 * (`verifyToolCall`) refuses a call that went around the gateway.
 */

let upstream: GuardedMcpServer;
let gateway: TestGateway;
let org: TestOrganization;
let agent: TestAgent;
let scratch: string;
let verifier: DecisionTokenVerifier | undefined;
/** The params of every call the server received. */
const received: Array<CallToolRequest['params']> = [];

async function connect(url: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'e2e-token-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } } }));
  return client;
}

function textOf(result: Awaited<ReturnType<Client['callTool']>>): string {
  return (result.content as Array<{ text: string }>)[0].text;
}

beforeAll(async () => {
  upstream = await startGuardedMcpUpstream({
    tools: [{ name: 'transfer', description: 'Moves money', inputSchema: { type: 'object', properties: { amount: { type: 'number' }, to: { type: 'string' } } } }],
    guard: () => 'anyone',
    // The server's own check, as an upstream uses the SDK: a call without a valid token for exactly this tool and these arguments is refused.
    call: async (params) => {
      received.push(JSON.parse(JSON.stringify(params)) as CallToolRequest['params']);
      try {
        const decision = await verifier!.verifyToolCall(params);
        return { content: [{ type: 'text', text: `moved ${String(params.arguments?.amount)} under ${decision.decisionId} for ${decision.agentId}` }] };
      } catch (error) {
        if (!(error instanceof DecisionTokenError)) throw error;
        return { isError: true, content: [{ type: 'text', text: `refused: ${error.problem}` }] };
      }
    },
  });
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-mcp-tokens-'));
  const serversFile = path.join(scratch, 'mcp-servers.yaml');
  fs.writeFileSync(serversFile, `servers:\n  - name: bank\n    url: ${upstream.url}\n`);
  gateway = await startGateway({ MCP_SERVERS: serversFile });
  verifier = new DecisionTokenVerifier({ jwksUrl: `${gateway.url}/.well-known/jwks.json`, issuer: TEST_PUBLIC_URL });
  org = await createOrganization(gateway, 'enterprise', 'MCP decision tokens org');
  agent = await createAgent(gateway, org, { name: 'bank-bot', trustTier: 'trusted' });
  await putPolicies(gateway, org, [{ name: 'no-big-transfers', action: 'call:bank/transfer', condition: 'args.amount > 1000', reason: 'Too much' }]);
}, 120_000);

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

describe('decision tokens in MCP tool calls', () => {
  it('lets the server accept the governed call and refuse the direct one', async () => {
    const through = await connect(`${gateway.url}/mcp/bank`, agent.token);
    const governed = textOf(await through.callTool({ name: 'transfer', arguments: { to: 'ada', amount: 10 } }));
    expect(governed).toMatch(new RegExp(`^moved 10 under aud_\\w+ for ${agent.id}$`));
    const [entry] = await auditEntries(gateway, org, 'action=call:bank/transfer', 1);
    expect(entry).toMatchObject({ decision: 'allow', source: 'mcp', agentId: agent.id });
    const direct = await connect(upstream.url);
    expect(textOf(await direct.callTool({ name: 'transfer', arguments: { to: 'ada', amount: 10 } }))).toBe('refused: missing');
    await Promise.all([through.close(), direct.close()]);
  });

  it('binds the token to the tool and its arguments: replayed directly with others it is refused', async () => {
    const through = await connect(`${gateway.url}/mcp/bank`, agent.token);
    await through.callTool({ name: 'transfer', arguments: { to: 'ada', amount: 20 } });
    const token = received[received.length - 1]._meta?.[TOOL_CALL_TOKEN_KEY] as string;
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+~[\w-]+~[\w-]*$/);
    const direct = await connect(upstream.url);
    const replay = (args: Record<string, unknown>) => direct.callTool({ name: 'transfer', arguments: args, _meta: { [TOOL_CALL_TOKEN_KEY]: token } });
    // The same call within the token's minute is what a token cannot stop (docs/security.md); any other is refused.
    expect(textOf(await replay({ amount: 20, to: 'ada' }))).toMatch(/^moved 20 under/);
    expect(textOf(await replay({ to: 'ada', amount: 5000 }))).toBe('refused: wrong_request');
    expect(textOf(await replay({ to: 'eve', amount: 20 }))).toBe('refused: wrong_request');
    await Promise.all([through.close(), direct.close()]);
  });

  it('never forwards a token the agent put in _meta: the server gets the gateway’s own, and the agent’s other _meta', async () => {
    const through = await connect(`${gateway.url}/mcp/bank`, agent.token);
    await through.callTool({ name: 'transfer', arguments: { to: 'ada', amount: 30 } });
    const genuine = received[received.length - 1]._meta?.[TOOL_CALL_TOKEN_KEY] as string;
    // An agent that replays a token it once saw, or makes one up: neither reaches the server.
    for (const forged of [genuine, 'agent-made']) {
      const result = await through.callTool({ name: 'transfer', arguments: { to: 'ada', amount: 30 }, _meta: { [TOOL_CALL_TOKEN_KEY]: forged, 'example.com/trace': 'kept' } });
      expect(textOf(result)).toMatch(/^moved 30 under/);
      const meta = received[received.length - 1]._meta as Record<string, unknown>;
      expect(meta[TOOL_CALL_TOKEN_KEY]).not.toBe(forged);
      expect(meta['example.com/trace']).toBe('kept');
    }
    await through.close();
  });

  it('forwards no denied call, so no token is ever made for one', async () => {
    const through = await connect(`${gateway.url}/mcp/bank`, agent.token);
    const before = received.length;
    const denied = await mcpError(through.callTool({ name: 'transfer', arguments: { to: 'eve', amount: 5000 } }));
    expect(denied.code).toBe(-32003);
    expect(received.length).toBe(before);
    await through.close();
  });
});
