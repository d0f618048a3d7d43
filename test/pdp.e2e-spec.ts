import { ClientDuplexStream, ClientReadableStream, status as GrpcStatus, ServiceError } from '@grpc/grpc-js';
import http from 'node:http';
import http2 from 'node:http2';
import { call } from './support/http-client';
import { apiKeyMetadata, evaluate, freePort, PdpClient, pdpClient, struct } from './support/pdp-client';
import { ownDatabase } from './support/own-database';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * The policy decision point through every transport it has: gRPC Evaluate, EvaluateStream and
 * Subscribe, the HTTP fallback and /v1/check, with adapter API keys; a real gateway with a real
 * gRPC listener, on the run's database.
 */

interface AuditEntry {
  id: string;
  source: string;
  kind: string;
  action: string;
  decision: string;
  policyName: string | null;
  agentId: string | null;
  traceId: string | null;
  status: number | null;
}

const POLICIES = `
policies:
  - name: block-sensitive-files
    match: { plugin: FilePlugin, function: "Read*" }
    rules:
      - name: system-paths
        condition: args.path starts_with "/etc" or args.path contains ".."
        action: deny
        reason: Access to system files blocked
  - name: trusted-writes
    match: { action: "FilePlugin.Write*" }
    rules:
      - condition: agent.trust_tier < trusted
        action: deny
        reason: Writes need a trusted agent
  - name: pii-guard
    rules:
      - condition: context.data_class == "pii" and not ("pii" in agent.tags)
        action: deny
        reason: PII needs the pii tag
  - name: plan-aware
    match: { plugin: ExportPlugin }
    rules:
      - condition: org.plan == "enterprise" and org.usage.agents >= 2 and org.usage.policy_checks > 0
        action: deny
        reason: Bulk exports are reviewed on large accounts
  - name: search-rate
    match: { plugin: SearchPlugin }
    rules:
      - condition: rate_limit(per_agent, 3, 1m)
        action: deny
        reason: Too many searches
`;

let gateway: TestGateway;
let grpcPort: number;
let client: PdpClient;
let org: TestOrganization;
let key: string;
let agentId: string;
let trustedId: string;

async function createAgent(body: Record<string, unknown>): Promise<string> {
  const response = await call<{ id: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'pdp-agent', ...body } });
  expect(response.status).toBe(201);
  return response.body.id;
}

async function createKey(owner: TestOrganization = org, on: TestGateway = gateway): Promise<{ id: string; key: string }> {
  const response = await call<{ id: string; key: string }>(on.url, 'POST', '/admin/api-keys', { adminToken: owner.adminToken, body: { name: 'pdp test' } });
  expect(response.status).toBe(201);
  return response.body;
}

/** PUTs each policy of a `policies:` list, in order, as an operator would. */
async function loadPolicies(owner: TestOrganization, yaml: string): Promise<void> {
  const documents = yaml.split(/\n {2}- name: /).slice(1);
  for (const document of documents) {
    const text = `name: ${document.replace(/\n {4}/g, '\n')}\n`;
    const name = document.slice(0, document.indexOf('\n'));
    const response = await call(gateway.url, 'PUT', `/admin/policies/${name}`, { adminToken: owner.adminToken, body: text, headers: { 'content-type': 'application/yaml' } });
    expect([200, 201]).toContain(response.status);
  }
}

function check(body: unknown, apiKey: string | null = key) {
  return call(gateway.url, 'POST', '/v1/check', { body, headers: apiKey === null ? {} : { 'x-api-key': apiKey } });
}

function httpEvaluate(body: unknown, apiKey: string | null = key) {
  return call(gateway.url, 'POST', '/api/v1/pdp/evaluate', { body, headers: apiKey === null ? {} : { 'x-api-key': apiKey } });
}

function grpcError(promise: Promise<unknown>): Promise<ServiceError> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: ServiceError) => error,
  );
}

/**
 * Subscribe over raw HTTP/2 (since_version 0 unless `message` says otherwise) with a small receive
 * window and a paused stream: a client that does not read, which grpc-js clients cannot be (they
 * read whatever arrives), and that can send bytes no generated stub would.
 */
function rawSubscriber(port: number, apiKey: string, message = Buffer.alloc(0)): { readToEnd(): Promise<http2.IncomingHttpHeaders> } {
  const session = http2.connect(`http://127.0.0.1:${port}`, { settings: { initialWindowSize: 256 } });
  const stream = session.request({
    ':method': 'POST',
    ':path': '/agentgov.pdp.v1.PolicyDecisionPoint/Subscribe',
    'content-type': 'application/grpc',
    te: 'trailers',
    'x-api-key': apiKey,
  });
  stream.pause();
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  stream.end(Buffer.concat([prefix, message]));
  // A call that fails before its first message answers trailers-only: the status is in the response headers.
  let headers: http2.IncomingHttpHeaders = {};
  stream.on('response', (received) => (headers = received));
  const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => {
    stream.on('trailers', resolve);
    stream.on('close', () => resolve(headers));
  });
  return {
    async readToEnd() {
      stream.resume();
      stream.on('data', () => undefined);
      const timer = setTimeout(() => stream.close(), 10_000);
      try {
        return await trailers;
      } finally {
        clearTimeout(timer);
        session.close();
      }
    },
  };
}

/** The status a stream ends with; a stream still open after 5 s is cancelled and fails the test. */
function streamError(stream: ClientReadableStream<unknown> | ClientDuplexStream<object, unknown>): Promise<ServiceError> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stream.cancel();
      reject(new Error('the stream was still open 5 s later'));
    }, 5000);
    stream.on('error', (error: ServiceError) => {
      clearTimeout(timer);
      resolve(error);
    });
    stream.on('end', () => {
      clearTimeout(timer);
      reject(new Error('the stream ended without an error'));
    });
  });
}

/** The entries of a query once `ready` holds for them (entries are written in batches, off the request path). */
async function auditEntries(query: string, ready: number | ((entries: AuditEntry[]) => boolean)): Promise<AuditEntry[]> {
  const done = typeof ready === 'number' ? (entries: AuditEntry[]) => entries.length >= ready : ready;
  for (let attempt = 0; attempt < 100; attempt++) {
    const response = await call<{ entries: AuditEntry[] }>(gateway.url, 'GET', `/admin/audit?limit=1000&${query}`, { adminToken: org.adminToken });
    if (done(response.body.entries)) return response.body.entries;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the audit entries for ${query} never arrived`);
}

beforeAll(async () => {
  grpcPort = await freePort();
  gateway = await startGateway({ PDP_GRPC_PORT: String(grpcPort) });
  client = pdpClient(grpcPort);
  org = await createOrganization(gateway, 'enterprise', 'PDP org');
  await loadPolicies(org, POLICIES);
  key = (await createKey()).key;
  agentId = await createAgent({ trustTier: 'verified', tags: ['finance'] });
  trustedId = await createAgent({ trustTier: 'trusted', tags: ['pii'] });
});

afterAll(async () => {
  client?.close();
  await gateway?.close();
});

/** The same question as each transport asks it; answers in one shape: [decision, policy, rule]. */
const transports: Array<[string, (question: Question) => Promise<[string, string, string]>]> = [
  [
    'gRPC Evaluate',
    async (q) => {
      const answer = await evaluate(client, key, { agentId: q.agentId, plugin: q.plugin, function: q.function, args: struct(q.args), context: struct(q.context) });
      return [answer.decision === 'DECISION_ALLOW' ? 'allow' : 'deny', answer.policy as string, answer.rule as string];
    },
  ],
  [
    'gRPC EvaluateStream',
    (q) =>
      new Promise((resolve, reject) => {
        const stream = client.EvaluateStream(apiKeyMetadata(key));
        stream.on('data', (answer: Record<string, unknown>) => resolve([answer.decision === 'DECISION_ALLOW' ? 'allow' : 'deny', answer.policy as string, answer.rule as string]));
        stream.on('error', reject);
        stream.write({ agentId: q.agentId, plugin: q.plugin, function: q.function, args: struct(q.args), context: struct(q.context) });
        stream.end();
      }),
  ],
  [
    'HTTP fallback',
    async (q) => {
      const response = await httpEvaluate({ agentId: q.agentId, plugin: q.plugin, function: q.function, args: q.args, context: q.context });
      expect(response.status).toBe(200);
      return [response.body.decision === 'DECISION_ALLOW' ? 'allow' : 'deny', response.body.policy as string, response.body.rule as string];
    },
  ],
  [
    '/v1/check',
    async (q) => {
      const response = await check({ agentId: q.agentId, plugin: q.plugin, function: q.function, arguments: q.args, context: q.context });
      expect(response.status).toBe(200);
      return [response.body.decision as string, response.body.policy as string, (response.body.rule as string | undefined) ?? ''];
    },
  ],
];

interface Question {
  agentId: string;
  plugin: string;
  function: string;
  args: Record<string, unknown>;
  context: Record<string, unknown>;
}

describe('the same decision through every transport', () => {
  const cases: Array<[string, () => Question, [string, string, string]]> = [
    ['a system path read', () => ({ agentId, plugin: 'FilePlugin', function: 'ReadFile', args: { path: '/etc/passwd' }, context: {} }), ['deny', 'block-sensitive-files', 'system-paths']],
    ['a path climbing up', () => ({ agentId, plugin: 'FilePlugin', function: 'ReadText', args: { path: 'a/../../b' }, context: {} }), ['deny', 'block-sensitive-files', 'system-paths']],
    ['an ordinary read', () => ({ agentId, plugin: 'FilePlugin', function: 'ReadFile', args: { path: '/tmp/a.txt' }, context: {} }), ['allow', 'block-sensitive-files', '']],
    ['a write by a verified agent', () => ({ agentId, plugin: 'FilePlugin', function: 'WriteFile', args: { path: '/tmp/a' }, context: {} }), ['deny', 'trusted-writes', 'trusted-writes#0']],
    ['a write by a trusted agent', () => ({ agentId: trustedId, plugin: 'FilePlugin', function: 'WriteFile', args: { path: '/tmp/a' }, context: {} }), ['allow', 'trusted-writes', '']],
    ['pii context without the tag', () => ({ agentId, plugin: 'CrmPlugin', function: 'Lookup', args: {}, context: { data_class: 'pii' } }), ['deny', 'pii-guard', 'pii-guard#0']],
    ['pii context with the tag', () => ({ agentId: trustedId, plugin: 'CrmPlugin', function: 'Lookup', args: {}, context: { data_class: 'pii' } }), ['allow', 'pii-guard', '']],
    ['a plan-aware condition on org.plan and org.usage', () => ({ agentId, plugin: 'ExportPlugin', function: 'Bulk', args: {}, context: {} }), ['deny', 'plan-aware', 'plan-aware#0']],
  ];
  describe.each(transports)('%s', (_name, ask) => {
    it.each(cases)('%s', async (_label, question, expected) => {
      expect(await ask(question())).toEqual(expected);
    });
  });

  it('records each decision with its source, and returns the entry id as decisionId', async () => {
    const traceId = `pdp-sources-${process.pid}`;
    const viaCheck = await check({ agentId, plugin: 'FilePlugin', function: 'ReadFile', arguments: { path: '/etc/x' }, traceId });
    const viaHttp = await httpEvaluate({ agentId, plugin: 'FilePlugin', function: 'ReadFile', args: { path: '/etc/x' }, traceId });
    const viaGrpc = await evaluate(client, key, { agentId, plugin: 'FilePlugin', function: 'ReadFile', args: struct({ path: '/etc/x' }), traceId });
    expect(viaCheck.body).toMatchObject({ decision: 'deny', traceId, policy: 'block-sensitive-files', cacheable: true, cacheTtlMs: 30000, enforced: true });
    expect(viaHttp.body).toMatchObject({ decision: 'DECISION_DENY', traceId, policyVersion: expect.any(String), cacheTtlMs: '30000' });
    expect(viaGrpc).toMatchObject({ decision: 'DECISION_DENY', traceId, cacheable: true });
    const ids = [viaCheck.body.decisionId, viaHttp.body.decisionId, viaGrpc.decisionId];
    const entries = await auditEntries(`agentId=${agentId}&action=FilePlugin.ReadFile`, (found) => ids.every((id) => found.some((entry) => entry.id === id)));
    const byId = new Map(entries.map((entry) => [entry.id, entry]));
    expect(byId.get(viaCheck.body.decisionId as string)).toMatchObject({ source: 'check', decision: 'deny', status: 403, traceId });
    expect(byId.get(viaHttp.body.decisionId as string)).toMatchObject({ source: 'pdp', decision: 'deny', status: 403, traceId });
    expect(byId.get(viaGrpc.decisionId as string)).toMatchObject({ source: 'pdp', decision: 'deny', status: 403, traceId });
  });

  it('takes the trace id from gRPC metadata (x-trace-id, else traceparent) as HTTP takes it from headers', async () => {
    const traceId = `pdp-metadata-${process.pid}`;
    const w3cTraceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const traceparent = `00-${w3cTraceId}-00f067aa0ba902b7-01`;
    const question = { agentId, action: 'traced' };
    const withMetadata = (name: string, value: string) => {
      const metadata = apiKeyMetadata(key);
      metadata.set(name, value);
      return metadata;
    };
    const unary = (name: string, value: string) =>
      new Promise<Record<string, unknown>>((resolve, reject) => client.Evaluate(question, withMetadata(name, value), (error, answer) => (error ? reject(error) : resolve(answer))));
    const streamed = await new Promise<Array<Record<string, unknown>>>((resolve, reject) => {
      const answers: Array<Record<string, unknown>> = [];
      const stream = client.EvaluateStream(withMetadata('x-trace-id', traceId));
      stream.on('data', (answer: Record<string, unknown>) => answers.push(answer));
      stream.on('error', reject);
      stream.on('end', () => resolve(answers));
      stream.write(question);
      stream.write({ ...question, traceId: 'own-trace' });
      stream.end();
    });
    const viaHeader = await call(gateway.url, 'POST', '/api/v1/pdp/evaluate', { body: question, headers: { 'x-api-key': key, 'x-trace-id': traceId } });
    expect(viaHeader.body).toMatchObject({ traceId });
    expect(await unary('x-trace-id', traceId)).toMatchObject({ traceId });
    expect(await unary('traceparent', traceparent)).toMatchObject({ traceId: w3cTraceId });
    expect(streamed.map((answer) => answer.traceId)).toEqual([traceId, 'own-trace']);
    const entries = await auditEntries(`agentId=${agentId}&action=traced`, 5);
    expect(entries.map((entry) => entry.traceId).sort()).toEqual([traceId, traceId, traceId, w3cTraceId, 'own-trace'].sort());
  });
});

describe('redaction', () => {
  it('redacts an API key however the argument spells it (apiKey, api-key, x-api-key), over gRPC and HTTP alike', async () => {
    const args = { apiKey: 'sk-live-1', headers: { 'x-api-key': 'sk-live-2', 'Api-Key': 'sk-live-3' }, API_KEY: 'sk-live-4', apiKeyId: 'sk-live-5', keep: 'visible' };
    const redacted = { apiKey: '[redacted]', headers: { 'x-api-key': '[redacted]', 'Api-Key': '[redacted]' }, API_KEY: '[redacted]', apiKeyId: '[redacted]', keep: 'visible' };
    const viaGrpc = await evaluate(client, key, { agentId, action: 'Http.Call', args: struct(args) });
    const viaCheck = await check({ agentId, plugin: 'Http', function: 'Call', arguments: args });
    const ids = [viaGrpc.decisionId, viaCheck.body.decisionId];
    const entries = await auditEntries(`agentId=${agentId}&action=Http.Call`, (found) => ids.every((id) => found.some((entry) => entry.id === id)));
    for (const id of ids) {
      const entry = entries.find((found) => found.id === id) as unknown as { input: { args: unknown } };
      expect(entry.input.args).toEqual(redacted);
    }
  });
});

describe('EvaluateStream', () => {
  it('answers 10,000 requests on one stream, one each, in order', async () => {
    const total = 10_000;
    const answers: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const stream = client.EvaluateStream(apiKeyMetadata(key));
      stream.on('data', (answer: Record<string, unknown>) => answers.push(answer.traceId as string));
      stream.on('error', reject);
      stream.on('end', resolve);
      let sent = 0;
      const writeMore = () => {
        while (sent < total) {
          const path = sent % 3 === 0 ? '/etc/x' : `/tmp/${sent}`;
          const ok = stream.write({ agentId, plugin: 'FilePlugin', function: 'ReadFile', args: struct({ path }), traceId: `stream-${sent}` });
          sent++;
          if (!ok) return void stream.once('drain', writeMore);
        }
        stream.end();
      };
      writeMore();
    });
    expect(answers).toHaveLength(total);
    expect(answers.every((trace, index) => trace === `stream-${index}`)).toBe(true);
  });

  it('ends the stream with NOT_FOUND for an unknown agent', async () => {
    const error = await new Promise<ServiceError>((resolve) => {
      const stream = client.EvaluateStream(apiKeyMetadata(key));
      stream.on('data', () => undefined);
      stream.on('error', resolve);
      stream.write({ agentId: 'agent_nobody', plugin: 'FilePlugin', function: 'ReadFile' });
      stream.end();
    });
    expect(error.code).toBe(GrpcStatus.NOT_FOUND);
  });
});

describe('credentials', () => {
  it('answers 401 and UNAUTHENTICATED without a key or with an unknown one', async () => {
    for (const apiKey of [null, 'agk_not-a-key']) {
      const viaCheck = await check({ agentId, plugin: 'FilePlugin', function: 'ReadFile' }, apiKey);
      expect(viaCheck.status).toBe(401);
      expect(viaCheck.body).toMatchObject({ error: 'unauthorized' });
      expect((await httpEvaluate({ agentId, action: 'x' }, apiKey)).status).toBe(401);
      expect((await grpcError(evaluate(client, apiKey ?? undefined, { agentId, action: 'x' }))).code).toBe(GrpcStatus.UNAUTHENTICATED);
    }
    const error = await new Promise<ServiceError>((resolve) => {
      const stream = client.Subscribe({ sinceVersion: 0 }, apiKeyMetadata(undefined));
      stream.on('error', resolve);
    });
    expect(error.code).toBe(GrpcStatus.UNAUTHENTICATED);
  });

  it('ends an EvaluateStream without a key or with an unknown one UNAUTHENTICATED, and keeps serving', async () => {
    for (const apiKey of [undefined, 'agk_not-a-key']) {
      const stream = client.EvaluateStream(apiKeyMetadata(apiKey));
      const ended = streamError(stream);
      stream.write({ agentId, action: 'x' });
      const error = await ended;
      expect(error.code).toBe(GrpcStatus.UNAUTHENTICATED);
      expect(error.details).toMatch(/X-Api-Key|Invalid or revoked API key/);
    }
    expect((await evaluate(client, key, { agentId, action: 'x' })).decision).toBe('DECISION_ALLOW');
  });

  it('does not take an admin token or an agent token as an adapter credential', async () => {
    const response = await call(gateway.url, 'POST', '/v1/check', { adminToken: org.adminToken, body: { agentId, plugin: 'A', function: 'b' } });
    expect(response.status).toBe(401);
  });

  it('lists keys without the secret, and a revoked key fails its very next call on both transports', async () => {
    const issued = await createKey();
    expect((await check({ agentId, plugin: 'FilePlugin', function: 'ReadFile' }, issued.key)).status).toBe(200);
    const listed = await call<{ apiKeys: Array<Record<string, unknown>> }>(gateway.url, 'GET', '/admin/api-keys', { adminToken: org.adminToken });
    const mine = listed.body.apiKeys.find((candidate) => candidate.id === issued.id)!;
    expect(mine).toMatchObject({ id: issued.id, revokedAt: null, prefix: issued.key.slice(0, 8) });
    expect(JSON.stringify(listed.body)).not.toContain(issued.key);

    expect((await call(gateway.url, 'DELETE', `/admin/api-keys/${issued.id}`, { adminToken: org.adminToken })).status).toBe(200);
    expect((await check({ agentId, plugin: 'FilePlugin', function: 'ReadFile' }, issued.key)).status).toBe(401);
    expect((await grpcError(evaluate(client, issued.key, { agentId, action: 'x' }))).code).toBe(GrpcStatus.UNAUTHENTICATED);
  });

  it('records one revocation when a key is revoked twice at once: one revokedAt, one policy version', async () => {
    const owner = await createOrganization(gateway, 'enterprise', 'Double revoke org');
    const versionOf = async () => (await call<{ version: number }>(gateway.url, 'GET', '/admin/policies/versions', { adminToken: owner.adminToken })).body.version;
    for (let round = 0; round < 10; round++) {
      const issued = await createKey(owner);
      const before = await versionOf();
      const answers = await Promise.all(
        [1, 2].map(() => call<{ revokedAt: string }>(gateway.url, 'DELETE', `/admin/api-keys/${issued.id}`, { adminToken: owner.adminToken })),
      );
      const listed = await call<{ apiKeys: Array<{ id: string; revokedAt: string }> }>(gateway.url, 'GET', '/admin/api-keys', { adminToken: owner.adminToken });
      const stored = listed.body.apiKeys.find((candidate) => candidate.id === issued.id)!.revokedAt;
      expect(answers.map((answer) => answer.body.revokedAt)).toEqual([stored, stored]);
      expect(await versionOf()).toBe(before + 1);
    }
  });

  it('ends an EvaluateStream opened before its key was revoked at the next request, UNAUTHENTICATED', async () => {
    const issued = await createKey();
    const stream = client.EvaluateStream(apiKeyMetadata(issued.key));
    const answers: Array<Record<string, unknown>> = [];
    const ended = streamError(stream);
    const first = new Promise((resolve) => stream.once('data', resolve));
    stream.on('data', (answer: Record<string, unknown>) => answers.push(answer));
    stream.write({ agentId, action: 'before-revoke' });
    await first;
    expect((await call(gateway.url, 'DELETE', `/admin/api-keys/${issued.id}`, { adminToken: org.adminToken })).status).toBe(200);
    for (let i = 0; i < 5; i++) stream.write({ agentId, action: 'after-revoke' });
    const error = await ended;
    expect(error.code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect(error.details).toBe('Invalid or revoked API key');
    expect(answers).toHaveLength(1);
  });

  it('ends a Subscribe opened before its key was revoked, UNAUTHENTICATED, without sending the organization’s later changes', async () => {
    const own = await createOrganization(gateway, 'enterprise', 'Revoked subscriber org');
    const issued = await createKey(own);
    const events: Array<Record<string, unknown>> = [];
    const stream = client.Subscribe({ sinceVersion: 0 }, apiKeyMetadata(issued.key));
    stream.on('data', (event: Record<string, unknown>) => events.push(event));
    const ended = streamError(stream);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await call(gateway.url, 'DELETE', `/admin/api-keys/${issued.id}`, { adminToken: own.adminToken })).status).toBe(200);
    await loadPolicies(own, 'policies:\n  - name: after-revoke\n    rules:\n      - condition: action == "x"\n        action: deny\n        reason: r\n');
    const error = await ended;
    expect(error.code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect(error.details).toBe('Invalid or revoked API key');
    expect(events).toEqual([]);
  });

  it('keeps organizations apart: another organization’s agent is unknown to this key', async () => {
    const other = await createOrganization(gateway, 'enterprise', 'Other PDP org');
    const otherKey = await createKey(other);
    const response = await check({ agentId, plugin: 'FilePlugin', function: 'ReadFile' }, otherKey.key);
    expect(response.status).toBe(404);
    expect((await grpcError(evaluate(client, otherKey.key, { agentId, action: 'x' }))).code).toBe(GrpcStatus.NOT_FOUND);
    expect((await call(gateway.url, 'DELETE', `/admin/api-keys/${otherKey.id}`, { adminToken: org.adminToken })).status).toBe(404);
  });

  it('refuses an API key name with a line break, naming the field', async () => {
    const response = await call(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'adapter\r\nforged' } });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: 'invalid_request', message: 'name must have a visible character and no control characters or lone surrogates' });
  });

  it('counts API keys with admin tokens against the plan’s teamMembers', async () => {
    const free = await createOrganization(gateway, 'free', 'Free PDP org');
    const response = await call(gateway.url, 'POST', '/admin/api-keys', { adminToken: free.adminToken, body: {} });
    expect(response.status).toBe(403);
    expect(response.body).toMatchObject({ error: 'plan_limit_exceeded', message: 'The free plan allows 1 team member', limit: 1, plan: 'free' });
  });
});

describe('bad input', () => {
  it.each([
    ['agentId of the wrong type', { agentId: 42, plugin: 'A', function: 'b' }, 'agentId must be a string'],
    ['no agentId', { plugin: 'A', function: 'b' }, 'agentId is required'],
    ['no plugin', { agentId: 'agent_x', function: 'b' }, 'plugin is required'],
    ['arguments not an object', { agentId: 'agent_x', plugin: 'A', function: 'b', arguments: [1] }, 'arguments must be a JSON object'],
    ['an unknown field', { agentId: 'agent_x', plugin: 'A', function: 'b', color: 'red' }, 'unknown field color'],
  ])('/v1/check: %s is a 400 naming it', async (_label, body, message) => {
    const response = await check(body);
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: 'invalid_request', message: expect.stringContaining(message) });
  });

  it('answers malformed JSON 400, a non-JSON body 415 and an oversized body 413', async () => {
    const headers = { 'x-api-key': key, 'content-type': 'application/json' };
    expect((await call(gateway.url, 'POST', '/v1/check', { body: '{"agentId":', headers })).body).toMatchObject({ error: 'invalid_json' });
    expect((await call(gateway.url, 'POST', '/v1/check', { body: 'agentId=x', headers: { 'x-api-key': key, 'content-type': 'text/plain' } })).status).toBe(415);
    const huge = JSON.stringify({ agentId, plugin: 'A', function: 'b', arguments: { blob: 'x'.repeat(1_100_000) } });
    expect((await call(gateway.url, 'POST', '/v1/check', { body: huge, headers })).status).toBe(413);
  });

  // An SDK's HTTP fallback keeps its connection alive: after a 413 the body was left unread, and
  // the next check on that connection never got an answer.
  it.each(['/v1/check', '/api/v1/pdp/evaluate'])('keeps a kept-alive connection answering after an oversized body on %s (413)', async (path) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const post = (body: string) =>
      new Promise<number | undefined>((resolve, reject) => {
        const request = http.request(`${gateway.url}${path}`, { method: 'POST', agent, timeout: 5000, headers: { 'x-api-key': key, 'content-type': 'application/json' } }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode));
        });
        request.on('timeout', () => request.destroy(new Error('no answer within 5 s')));
        request.on('error', reject);
        request.end(body);
      });
    try {
      expect(await post(JSON.stringify({ agentId, plugin: 'A', function: 'b', arguments: { blob: 'x'.repeat(3_000_000) } }))).toBe(413);
      const small = JSON.stringify({ agentId, plugin: 'A', function: 'b' });
      expect(await post(small)).toBe(200);
      expect(await post(small)).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  it('answers gRPC INVALID_ARGUMENT for missing fields, and refuses an oversized message without a crash', async () => {
    const missing = await grpcError(evaluate(client, key, { plugin: 'A', function: 'b' }));
    expect(missing.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(missing.details).toContain('agentId is required');
    const noAction = await grpcError(evaluate(client, key, { agentId }));
    expect(noAction.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    // The limits of the HTTP forms hold over gRPC too (an over-long agent id was echoed whole in NOT_FOUND).
    const longId = await grpcError(evaluate(client, key, { agentId: 'a'.repeat(257), action: 'x' }));
    expect([longId.code, longId.details]).toEqual([GrpcStatus.INVALID_ARGUMENT, 'agentId must be at most 256 characters']);
    const longAction = await grpcError(evaluate(client, key, { agentId, action: 'x'.repeat(2049) }));
    expect([longAction.code, longAction.details]).toEqual([GrpcStatus.INVALID_ARGUMENT, 'action must be at most 2048 characters']);
    const oversized = await grpcError(evaluate(client, key, { agentId, action: 'x', args: struct({ blob: 'x'.repeat(1_100_000) }) }));
    expect(oversized.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    expect(await evaluate(client, key, { agentId, action: 'still-up' })).toMatchObject({ decision: 'DECISION_ALLOW' });
  });

  it('refuses a number that is not finite (NaN, Infinity, 1e400), which a policy would compare as no JSON number compares and the audit trail would record as null', async () => {
    for (const amount of [NaN, Infinity, -Infinity]) {
      const error = await grpcError(evaluate(client, key, { agentId, action: 'pay', args: struct({ payment: { amount } }) }));
      expect([error.code, error.details]).toEqual([GrpcStatus.INVALID_ARGUMENT, expect.stringContaining('not a finite number')]);
    }
    const viaContext = await grpcError(evaluate(client, key, { agentId, action: 'pay', context: struct({ limits: [NaN] }) }));
    expect(viaContext.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    const headers = { 'x-api-key': key, 'content-type': 'application/json' };
    const overHttp = await call(gateway.url, 'POST', '/v1/check', { body: `{"agentId":"${agentId}","plugin":"Pay","function":"send","arguments":{"amount":1e400}}`, headers });
    expect(overHttp.status).toBe(400);
    expect(overHttp.body).toEqual({ error: 'invalid_request', message: 'arguments.amount is not a finite number' });
    const outcome = await call(gateway.url, 'POST', '/v1/audit', { body: `{"agentId":"${agentId}","plugin":"Pay","function":"send","decision":"allow","durationMs":1,"arguments":{"amount":-1e400}}`, headers });
    expect(outcome.status).toBe(400);
    expect(await evaluate(client, key, { agentId, action: 'pay', args: struct({ amount: 1e308, zero: -0 }) })).toMatchObject({ decision: 'DECISION_ALLOW' });
  });

  it('answers gRPC INVALID_ARGUMENT, as HTTP answers 400, for a value the database refuses (a NUL character) on Evaluate and EvaluateStream', async () => {
    const refused = 'A value in the request cannot be stored (for example a NUL character or an out-of-range number)';
    const unary = await grpcError(evaluate(client, key, { agentId: 'agent\u0000x', action: 'x' }));
    expect(unary.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(unary.details).toBe(refused);
    const stream = client.EvaluateStream(apiKeyMetadata(key));
    stream.on('data', () => undefined);
    const ended = streamError(stream);
    stream.write({ agentId: 'agent\u0000x', action: 'x' });
    const streamed = await ended;
    expect(streamed.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(streamed.details).toBe(refused);
  });

  it('answers gRPC INVALID_ARGUMENT, naming the problem, for bytes that are not a PolicyRequest', async () => {
    // Field 1 (agent_id) announced as 100 bytes long, then only two: a truncated message.
    const truncated = Buffer.from([0x0a, 100, 0x61, 0x62]);
    const answer = await new Promise<ServiceError>((resolve, reject) =>
      client.makeUnaryRequest(
        '/agentgov.pdp.v1.PolicyDecisionPoint/Evaluate',
        (bytes: Buffer) => bytes,
        (bytes: Buffer) => bytes,
        truncated,
        apiKeyMetadata(key),
        (error) => (error ? resolve(error) : reject(new Error('a truncated message was answered'))),
      ),
    );
    expect(answer.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    // The wording after the prefix is protobufjs's (src/gateway/pdp/policy-messages.ts).
    expect(answer.details).toMatch(/^malformed PolicyRequest: ./);
  });

  it('answers the HTTP fallback’s unknown enum-like and wrong-typed fields with a 400', async () => {
    expect((await httpEvaluate({ agent_id: agentId, action: 'x', args: 'no' })).body).toMatchObject({ error: 'invalid_request', message: 'args must be a JSON object' });
    expect((await httpEvaluate({ agentId, action: 7 })).body).toMatchObject({ error: 'invalid_request', message: 'action must be a string' });
    expect((await httpEvaluate({ agent_id: agentId, action: 'read:x' })).status).toBe(200);
  });
});

describe('rate limits', () => {
  it('answers 429 and RESOURCE_EXHAUSTED past rate_limit(per_agent, 3, 1m), recording each', async () => {
    const searcher = await createAgent({ name: 'searcher' });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await check({ agentId: searcher, plugin: 'SearchPlugin', function: 'Query' })).status);
    const limited = await check({ agentId: searcher, plugin: 'SearchPlugin', function: 'Query' });
    expect(statuses).toEqual([200, 200, 200]);
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ error: 'rate_limited', retry_after: expect.any(Number), limit: '3/1m per_agent' });
    // Retry-After, as the proxy's 429 has it: HTTP clients' retry policies read the header, not the body.
    expect(limited.headers.get('retry-after')).toBe(String(limited.body.retry_after));
    const viaFallback = await httpEvaluate({ agentId: searcher, plugin: 'SearchPlugin', function: 'Query' });
    expect([viaFallback.status, viaFallback.headers.get('retry-after')]).toEqual([429, String(viaFallback.body.retry_after)]);
    const viaGrpc = await grpcError(evaluate(client, key, { agentId: searcher, plugin: 'SearchPlugin', function: 'Query' }));
    expect(viaGrpc.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    // The same wait as a trailer: gRPC had only the message, so SDKs could not tell when to retry.
    expect(Number(viaGrpc.metadata.get('retry-after')[0])).toBeGreaterThan(0);
    const decisions = (found: AuditEntry[]) => found.filter((entry) => entry.kind === 'decision');
    const entries = decisions(await auditEntries(`agentId=${searcher}`, (found) => decisions(found).length >= 6));
    expect(entries.map((entry) => [entry.source, entry.status]).sort()).toEqual([["check", 200], ["check", 200], ["check", 200], ["check", 429], ["pdp", 429], ["pdp", 429]]);
  });
});

describe('/v1/audit', () => {
  it('records an outcome once per eventId, linked to its decision', async () => {
    const decided = await check({ agentId, plugin: 'FilePlugin', function: 'ReadFile', arguments: { path: '/tmp/ok' } });
    const eventId = `evt-${process.pid}-1`;
    const body = { agentId, plugin: 'FilePlugin', function: 'ReadFile', decision: 'allow', durationMs: 12.5, resultSummary: 'read 3 lines', eventId, decisionId: decided.body.decisionId };
    const first = await call(gateway.url, 'POST', '/v1/audit', { body, headers: { 'x-api-key': key } });
    const replay = await call(gateway.url, 'POST', '/v1/audit', { body, headers: { 'x-api-key': key } });
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ accepted: true, recorded: true });
    expect(replay.status).toBe(202);
    expect(replay.body).toEqual({ accepted: true, recorded: false });
    const isOutcome = (entry: AuditEntry) => entry.kind === 'outcome';
    const outcomes = await auditEntries(`agentId=${agentId}&source=check&action=FilePlugin.ReadFile`, (found) => found.some(isOutcome));
    const recorded = outcomes.filter(isOutcome);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const again = (await auditEntries(`agentId=${agentId}&source=check&action=FilePlugin.ReadFile`, 2)).filter((entry) => entry.kind === 'outcome');
    expect(recorded).toHaveLength(1);
    expect(again).toHaveLength(1);
    const detail = await call<{ entries: Array<{ details: Record<string, unknown> }> }>(gateway.url, 'GET', `/admin/audit?limit=1&agentId=${agentId}&source=check`, { adminToken: org.adminToken });
    expect(detail.body.entries[0].details).toMatchObject({ eventId, decisionId: decided.body.decisionId, durationMs: 12.5 });
  });

  it('records the arguments exactly as sent, `constructor`, `__proto__` and `prototype` keys included, redacted as elsewhere', async () => {
    const sent = '{"constructor":{"path":"/etc/shadow"},"__proto__":{"path":"/etc/passwd"},"visible":1,"nested":{"constructor":"rm -rf /","prototype":3,"ok":2},"password":"hunter2"}';
    const eventId = `evt-${process.pid}-hidden-args`;
    const body = { agentId, plugin: 'Shell', function: 'Exec', decision: 'allow', durationMs: 1, eventId, arguments: JSON.parse(sent) as unknown };
    expect((await call(gateway.url, 'POST', '/v1/audit', { body, headers: { 'x-api-key': key } })).status).toBe(202);
    const found = await auditEntries(`agentId=${agentId}&action=Shell.Exec`, (entries) => entries.some((entry) => entry.kind === 'outcome'));
    const outcome = found.find((entry) => entry.kind === 'outcome') as unknown as { input: { args: unknown } };
    expect(JSON.stringify(outcome.input.args)).toBe(sent.replace('"hunter2"', '"[redacted]"'));
  });

  it('refuses a malformed outcome with a 400 naming the field', async () => {
    const response = await call(gateway.url, 'POST', '/v1/audit', { body: { agentId, plugin: 'P', function: 'f', decision: 'maybe', durationMs: -1 }, headers: { 'x-api-key': key } });
    expect(response.status).toBe(400);
    expect(response.body.message).toEqual(expect.stringContaining('decision'));
    expect(response.body.message).toEqual(expect.stringContaining('durationMs'));
  });
});

describe('Subscribe', () => {
  function collect(subscriber: PdpClient, since: number, count: number, on: TestGateway = gateway, apiKey = key): Promise<Array<Record<string, unknown>>> {
    void on;
    return new Promise((resolve, reject) => {
      const events: Array<Record<string, unknown>> = [];
      const stream = subscriber.Subscribe({ sinceVersion: since }, apiKeyMetadata(apiKey));
      const timer = setTimeout(() => {
        stream.cancel();
        reject(new Error(`only ${events.length} of ${count} change events arrived`));
      }, 10_000);
      stream.on('data', (event: Record<string, unknown>) => {
        events.push(event);
        if (events.length < count) return;
        clearTimeout(timer);
        stream.cancel();
        resolve(events);
      });
      stream.on('error', (error: ServiceError) => {
        if (error.code !== GrpcStatus.CANCELLED) reject(error);
      });
    });
  }

  it('replays what a subscriber missed after since_version, then streams new changes as they happen', async () => {
    const own = await createOrganization(gateway, 'enterprise', 'Subscribe org');
    const ownKey = (await createKey(own)).key;
    await loadPolicies(own, 'policies:\n  - name: one\n    rules:\n      - condition: action == "x"\n        action: deny\n        reason: r\n');
    await loadPolicies(own, 'policies:\n  - name: two\n    rules:\n      - condition: action == "y"\n        action: deny\n        reason: r\n');
    const replayed = await collect(client, 1, 1, gateway, ownKey);
    expect(replayed).toEqual([expect.objectContaining({ policyVersion: 2, kind: 'created', orgId: own.id, changed: ['two'] })]);

    const live = collect(client, 2, 2, gateway, ownKey);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const agent = await call<{ id: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: own.adminToken, body: { name: 'sub-agent' } });
    await call(gateway.url, 'PATCH', `/admin/agents/${agent.body.id}`, { adminToken: own.adminToken, body: { trustTier: 'trusted' } });
    await call(gateway.url, 'DELETE', `/admin/agents/${agent.body.id}`, { adminToken: own.adminToken });
    expect(await live).toEqual([
      expect.objectContaining({ policyVersion: 3, kind: 'agent_changed', changed: [agent.body.id] }),
      expect.objectContaining({ policyVersion: 4, kind: 'agent_revoked', changed: [agent.body.id] }),
    ]);
    const answer = await evaluate(client, ownKey, { agentId: (await call<{ id: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: own.adminToken, body: { name: 'b' } })).body.id, action: 'z' });
    expect(answer.policyVersion).toBe(4);
  });

  it('ends a subscriber that does not read RESOURCE_EXHAUSTED once it falls 1,000 changes behind, and replays a long history page by page', async () => {
    const own = await createOrganization(gateway, 'enterprise', 'Slow subscriber org');
    const ownKey = (await createKey(own)).key;
    const stalled = rawSubscriber(grpcPort, ownKey);
    const changes = 1200;
    let next = 0;
    const change = async () => {
      while (next < changes) {
        const n = next++;
        const text = `name: churn-${n % 20}\nrules:\n  - condition: args.x == ${n}\n    action: deny\n    reason: r\n`;
        const response = await call(gateway.url, 'PUT', `/admin/policies/churn-${n % 20}`, { adminToken: own.adminToken, body: text, headers: { 'content-type': 'application/yaml' } });
        expect([200, 201]).toContain(response.status);
      }
    };
    await Promise.all(Array.from({ length: 8 }, change));
    const trailers = await stalled.readToEnd();
    expect(trailers['grpc-status']).toBe(String(GrpcStatus.RESOURCE_EXHAUSTED));
    expect(decodeURIComponent(String(trailers['grpc-message']))).toMatch(/^Subscriber fell more than 1000 changes behind; subscribe again with since_version \d+$/);

    const replayed = await collect(client, 0, changes, gateway, ownKey);
    expect(replayed.map((event) => event.policyVersion)).toEqual(Array.from({ length: changes }, (_, i) => i + 1));
  });

  it('answers INVALID_ARGUMENT for a since_version the organization never reached, and takes its current one', async () => {
    const own = await createOrganization(gateway, 'enterprise', 'Future version org');
    const ownKey = (await createKey(own)).key;
    await loadPolicies(own, 'policies:\n  - name: one\n    rules:\n      - condition: action == "x"\n        action: deny\n        reason: r\n');
    const error = await new Promise<ServiceError>((resolve) => {
      const stream = client.Subscribe({ sinceVersion: 100 }, apiKeyMetadata(ownKey));
      stream.on('error', resolve);
    });
    expect(error.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(error.details).toBe("since_version 100 is ahead of the organization's policy_version 1: subscribe again with since_version 1 or lower");
    const live = collect(client, 1, 1, gateway, ownKey);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await loadPolicies(own, 'policies:\n  - name: two\n    rules:\n      - condition: action == "y"\n        action: deny\n        reason: r\n');
    expect(await live).toEqual([expect.objectContaining({ policyVersion: 2 })]);
  });

  it('answers INVALID_ARGUMENT, naming the problem, for bytes that are not a PolicySubscription', async () => {
    for (const bytes of [[0x10, 0xff], [0x12, 0x01, 0x41]]) {
      const trailers = await rawSubscriber(grpcPort, key, Buffer.from(bytes)).readToEnd();
      expect(trailers['grpc-status']).toBe(String(GrpcStatus.INVALID_ARGUMENT));
      expect(decodeURIComponent(String(trailers['grpc-message']))).toMatch(/^malformed PolicySubscription: /);
    }
  });

  it('refuses another organization’s stream', async () => {
    const error = await new Promise<ServiceError>((resolve) => {
      const stream = client.Subscribe({ orgId: 'org_someone_else', sinceVersion: 0 }, apiKeyMetadata(key));
      stream.on('error', resolve);
    });
    expect(error.code).toBe(GrpcStatus.PERMISSION_DENIED);
  });

  it('shows a revocation made on one instance to a subscriber of another (Redis)', async () => {
    const redis = { REDIS_URL: 'redis://127.0.0.1:6379' };
    const [portA, portB] = [await freePort(), await freePort()];
    const a = await startGateway({ ...redis, PDP_GRPC_PORT: String(portA) });
    const b = await startGateway({ ...redis, PDP_GRPC_PORT: String(portB) });
    const subscriberOfB = pdpClient(portB);
    try {
      const shared = await createOrganization(a, 'enterprise', 'Cross-instance org');
      const sharedKey = (await createKey(shared, a)).key;
      const agent = await call<{ id: string }>(a.url, 'POST', '/admin/agents', { adminToken: shared.adminToken, body: { name: 'x' } });
      const events = collect(subscriberOfB, 0, 1, b, sharedKey);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await call(a.url, 'DELETE', `/admin/agents/${agent.body.id}`, { adminToken: shared.adminToken })).status).toBe(200);
      expect(await events).toEqual([expect.objectContaining({ kind: 'agent_revoked', changed: [agent.body.id], orgId: shared.id })]);
    } finally {
      subscriberOfB.close();
      await a.close();
      await b.close();
    }
  });
});

describe('the database down', () => {
  let database: Awaited<ReturnType<typeof ownDatabase>>;
  let instance: TestGateway;
  let pdp: PdpClient;
  let warmKey: string;
  let coldKey: string;
  let downAgentId: string;

  beforeAll(async () => {
    database = await ownDatabase();
    const port = await freePort();
    instance = await startGateway({ DATABASE_URL: database.url, PDP_GRPC_PORT: String(port), AUDIT_QUEUE_MAX: '5' });
    pdp = pdpClient(port);
    const owner = await createOrganization(instance, 'enterprise', 'Database-down org');
    warmKey = (await createKey(owner, instance)).key;
    coldKey = (await createKey(owner, instance)).key;
    downAgentId = (await call<{ id: string }>(instance.url, 'POST', '/admin/agents', { adminToken: owner.adminToken, body: { name: 'db-down' } })).body.id;
    expect((await evaluate(pdp, warmKey, { agentId: downAgentId, action: 'warm' })).decision).toBe('DECISION_ALLOW');
    await database.takeDown();
  });

  afterAll(async () => {
    pdp?.close();
    await instance?.close();
    // The cluster-event listener's reconnect timer fires up to 1 s after close (service.e2e-spec.ts).
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await database?.dispose();
  });

  it('answers UNAVAILABLE over gRPC and 503 over HTTP, which clients retry, not INTERNAL and 500', async () => {
    const question = { agentId: downAgentId, action: 'x' };
    expect((await grpcError(evaluate(pdp, coldKey, question))).code).toBe(GrpcStatus.UNAVAILABLE);
    const stream = pdp.EvaluateStream(apiKeyMetadata(coldKey));
    const ended = streamError(stream);
    stream.write(question);
    expect((await ended).code).toBe(GrpcStatus.UNAVAILABLE);
    const check = await call(instance.url, 'POST', '/v1/check', { body: { agentId: downAgentId, plugin: 'A', function: 'b' }, headers: { 'x-api-key': coldKey } });
    expect(check.status).toBe(503);
    expect(check.body).toMatchObject({ error: 'service_unavailable' });
    const fallback = await call(instance.url, 'POST', '/api/v1/pdp/evaluate', { body: question, headers: { 'x-api-key': coldKey } });
    expect(fallback.status).toBe(503);
    const outcome = { agentId: downAgentId, plugin: 'A', function: 'b', decision: 'allow', durationMs: 1, eventId: 'evt-db-down' };
    const audit = await call(instance.url, 'POST', '/v1/audit', { body: outcome, headers: { 'x-api-key': warmKey } });
    expect(audit.status).toBe(503);
    expect(audit.body).toMatchObject({ error: 'service_unavailable' });
  });

  it('holds /v1/audit while the audit queue is full (AUDIT_QUEUE_MAX), as decisions are held, instead of acknowledging outcomes it cannot write', async () => {
    const outcome = JSON.stringify({ agentId: downAgentId, plugin: 'A', function: 'b', decision: 'allow', durationMs: 1 });
    const statuses = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(`${instance.url}/v1/audit`, { method: 'POST', headers: { 'x-api-key': warmKey, 'content-type': 'application/json' }, body: outcome, signal: AbortSignal.timeout(1000) }).then(
          (response) => response.status,
          () => 'still waiting',
        ),
      ),
    );
    expect(statuses.filter((status) => status === 202).length).toBeLessThanOrEqual(5);
    expect(statuses).toContain('still waiting');
  });
});
