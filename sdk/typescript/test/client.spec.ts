import { spawn } from 'node:child_process';
import path from 'node:path';
import { GatewayRejectedError, GovernanceClient, GovernanceOptions, PolicyDeniedError, SoftDenial } from '../src';
import { AuditEntry, DECISION_CASES, freePort, SdkGateway, sleep, tempWal } from './support/sdk-gateway';
import { TcpRelay } from '../../../test/support/tcp-relay';

/**
 * The client against a real gateway process: decisions over gRPC and the HTTP fallback, denials
 * thrown or soft, per-plugin overrides, guard's audit event, the decision cache and its
 * invalidation by Subscribe, and the shared decision cases (sdk/fixtures/decision-cases.json).
 */

let gateway: SdkGateway;
const clients: GovernanceClient[] = [];

async function client(options: Partial<GovernanceOptions> = {}): Promise<GovernanceClient> {
  const created = await GovernanceClient.create({
    gatewayUrl: gateway.url,
    grpcAddress: `127.0.0.1:${gateway.grpcPort}`,
    apiKey: gateway.apiKey,
    agentId: gateway.agents.reader,
    auditLogPath: tempWal(),
    auditFlushMs: 50,
    ...options,
  });
  clients.push(created);
  return created;
}

async function putPolicy(name: string, yaml: string): Promise<void> {
  const response = await gateway.admin('PUT', `/admin/policies/${name}`, yaml, { 'content-type': 'application/yaml' });
  expect([200, 201]).toContain(response.status);
}

/** Calls `check` until it throws, or fails after `withinMs`; returns the error and when it came. */
async function firstFailure(check: () => Promise<unknown>, withinMs: number): Promise<{ error: unknown; afterMs: number }> {
  const started = Date.now();
  while (Date.now() - started < withinMs) {
    try {
      await check();
    } catch (error) {
      return { error, afterMs: Date.now() - started };
    }
    await sleep(10);
  }
  throw new Error(`check still succeeded after ${withinMs} ms`);
}

beforeAll(async () => {
  gateway = await SdkGateway.start();
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((each) => each.close()));
  await gateway?.stop();
});

describe('check', () => {
  it('allows over gRPC, naming the deciding policy and the decision entry', async () => {
    const result = await (await client()).check('FilePlugin', 'ReadFile', { path: '/tmp/notes.txt' });
    expect(result).toMatchObject({ allowed: true, decision: 'allow', policy: 'block-sensitive-files', via: 'grpc' });
    expect(result.decisionId).toMatch(/^aud_/);
    expect(result.policyVersion).toBeGreaterThan(0);
  });

  it('throws PolicyDeniedError on a denial by default', async () => {
    const denied = (await client()).check('FilePlugin', 'ReadFile', { path: '/etc/passwd' });
    await expect(denied).rejects.toBeInstanceOf(PolicyDeniedError);
    await expect(denied).rejects.toMatchObject({ result: { decision: 'deny', policy: 'block-sensitive-files', rule: 'system-paths', reason: 'Access to system files blocked' } });
  });

  it('returns a soft denial when throwOnDenied is false, and guard does not run the call', async () => {
    const soft = await client({ throwOnDenied: false });
    expect(await soft.check('FilePlugin', 'ReadFile', { path: '/etc/passwd' })).toMatchObject({ allowed: false, decision: 'deny', policy: 'block-sensitive-files' });
    let ran = false;
    const guarded = await soft.guard('FilePlugin', 'ReadFile', { path: '/etc/passwd' }, () => (ran = true));
    expect(guarded).toBeInstanceOf(SoftDenial);
    expect((guarded as SoftDenial).result.rule).toBe('system-paths');
    expect(ran).toBe(false);
  });

  it('applies per-plugin overrides of throwOnDenied and trustTier', async () => {
    await putPolicy('tier-hint', 'name: tier-hint\nmatch: { plugin: TierPlugin }\nrules:\n  - condition: context.adapter_trust_tier == "restricted"\n    action: deny\n    reason: Restricted adapters may not\n');
    const overridden = await client({ plugins: { FilePlugin: { throwOnDenied: false }, TierPlugin: { trustTier: 'restricted' } } });
    expect(await overridden.check('FilePlugin', 'ReadFile', { path: '/etc/passwd' })).toMatchObject({ allowed: false });
    await expect(overridden.check('PaymentPlugin', 'Refund', { amount: 500 })).rejects.toBeInstanceOf(PolicyDeniedError);
    await expect(overridden.check('TierPlugin', 'Run')).rejects.toMatchObject({ result: { policy: 'tier-hint' } });
    expect(await (await client()).check('TierPlugin', 'Run')).toMatchObject({ allowed: true, policy: 'tier-hint' });
  });

  it('refuses an unknown agent and a bad API key with GatewayRejectedError', async () => {
    await expect((await client({ agentId: 'agent_doesnotexist' })).check('A', 'b')).rejects.toMatchObject({ code: 'not_found' });
    const badKey = (await client({ apiKey: 'agk_not_a_key' })).check('A', 'b');
    await expect(badKey).rejects.toBeInstanceOf(GatewayRejectedError);
    await expect(badKey).rejects.toMatchObject({ code: 'unauthenticated' });
  });

  // proto/pdp.proto: a tripped rate_limit is RESOURCE_EXHAUSTED, an error, as in the Python SDK.
  it.each([
    ['gRPC', {}],
    ['HTTP', { grpcAddress: '127.0.0.1:1' }],
  ])('refuses a check past a rate limit with GatewayRejectedError resource_exhausted, over %s, whatever throwOnDenied says', async (transport, options) => {
    const plugin = `Limited${transport}Plugin`;
    await putPolicy(`limit-${transport.toLowerCase()}`, `name: limit-${transport.toLowerCase()}\nmatch: { plugin: ${plugin} }\nrules:\n  - condition: rate_limit(per_agent, 1, 1m)\n    action: deny\n    reason: One a minute\n`);
    const limited = await client({ throwOnDenied: false, ...options });
    expect(await limited.check(plugin, 'Run')).toMatchObject({ allowed: true });
    const refused = await limited.check(plugin, 'Run').catch((error: unknown) => error);
    expect(refused).toMatchObject({ name: 'GatewayRejectedError', code: 'resource_exhausted', message: expect.stringContaining('One a minute') });
    // When to try again, over either transport (gRPC: the retry-after trailer).
    expect((refused as GatewayRejectedError).retryAfterSeconds).toBeGreaterThan(0);
    let ran = false;
    await expect(limited.guard(plugin, 'Run', {}, () => (ran = true))).rejects.toMatchObject({ code: 'resource_exhausted' });
    expect(ran).toBe(false);
  });

  // Python maps 413 to invalid_argument too; gRPC answers an oversized message RESOURCE_EXHAUSTED.
  it('refuses a check too large for the gateway over HTTP (413) as invalid_argument, even under fail-open', async () => {
    const open = await client({ grpcAddress: '127.0.0.1:1', failureMode: 'fail-open' });
    let ran = false;
    const huge = { text: 'x'.repeat(2 * 1024 * 1024) };
    await expect(open.check('FilePlugin', 'WriteFile', huge)).rejects.toMatchObject({ name: 'GatewayRejectedError', code: 'invalid_argument' });
    await expect(open.guard('FilePlugin', 'WriteFile', huge, () => (ran = true))).rejects.toMatchObject({ code: 'invalid_argument' });
    expect(ran).toBe(false);
  });

  // JSON turns NaN and Infinity into null: the policy would judge a value the call never gets.
  it.each([
    ['gRPC', {}],
    ['HTTP', { grpcAddress: '127.0.0.1:1' }],
  ])('refuses an argument that is not a finite number, over %s, and guard does not run the call', async (_transport, options) => {
    await putPolicy('big-refunds', 'name: big-refunds\nmatch: { plugin: RefundPlugin }\nrules:\n  - condition: args.amount > 1000\n    action: deny\n    reason: Too large\n');
    const refunds = await client({ throwOnDenied: false, ...options });
    for (const amount of [Infinity, -Infinity, NaN]) {
      await expect(refunds.check('RefundPlugin', 'Refund', { amount })).rejects.toMatchObject({ code: 'invalid_argument', message: expect.stringContaining('amount') });
    }
    await expect(refunds.check('RefundPlugin', 'Refund', {}, { limits: [1, Infinity] })).rejects.toMatchObject({ code: 'invalid_argument' });
    let ran = false;
    await expect(refunds.guard('RefundPlugin', 'Refund', { amount: Infinity }, () => (ran = true))).rejects.toBeInstanceOf(GatewayRejectedError);
    expect(ran).toBe(false);
  });
});

describe('guard', () => {
  it('runs the call and records its duration and a result summary, linked to the decision', async () => {
    const agentId = await gateway.createAgent('guard-agent');
    const guarded = await client({ agentId });
    const value = await guarded.guard('CrmPlugin', 'GetCustomer', { id: 'cus_9' }, async () => {
      await sleep(30);
      return { id: 'cus_9', name: 'Ada' };
    });
    expect(value).toEqual({ id: 'cus_9', name: 'Ada' });
    await expect(guarded.guard('CrmPlugin', 'DeleteCustomer', { id: 'cus_9' }, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await guarded.flushAudit();
    const isOutcome = (entry: AuditEntry) => entry.kind === 'outcome';
    const entries = await gateway.auditEntries(`agentId=${agentId}&source=check`, (found) => found.filter(isOutcome).length >= 2);
    const outcomes = entries.filter(isOutcome);
    const read = outcomes.find((entry) => entry.action === 'CrmPlugin.GetCustomer')!;
    expect(read).toMatchObject({ decision: 'allow', reason: 'returned object of 2 keys' });
    expect(read.details).toMatchObject({ decisionId: expect.stringMatching(/^aud_/), eventId: expect.any(String) });
    expect(read.details!.durationMs as number).toBeGreaterThanOrEqual(25);
    expect(outcomes.find((entry) => entry.action === 'CrmPlugin.DeleteCustomer')).toMatchObject({ reason: 'raised Error' });
    expect(outcomes).toHaveLength(2);
  });

  it('records an event whose summary or duration exceeds what the gateway takes, cut to fit, rather than losing it', async () => {
    const agentId = await gateway.createAgent('long-audit-agent');
    const auditing = await client({ agentId });
    await auditing.audit({ plugin: 'ReportPlugin', function: 'Render', decision: 'allow', durationMs: 5, resultSummary: 'x'.repeat(3000) });
    await auditing.audit({ plugin: 'ReportPlugin', function: 'Export', decision: 'allow', durationMs: 90_000_000 });
    await auditing.audit({ plugin: 'ReportPlugin', function: 'Undo', decision: 'allow', durationMs: -1 });
    await auditing.flushAudit();
    const outcomes = (await gateway.auditEntries(`agentId=${agentId}&source=check`, (found) => found.filter((entry) => entry.kind === 'outcome').length >= 3)).filter((entry) => entry.kind === 'outcome');
    const byAction = new Map(outcomes.map((entry) => [entry.action, entry]));
    expect(byAction.get('ReportPlugin.Render')!.reason).toBe('x'.repeat(2048));
    expect(byAction.get('ReportPlugin.Export')!.details).toMatchObject({ durationMs: 86_400_000 });
    expect(byAction.get('ReportPlugin.Undo')!.details).toMatchObject({ durationMs: 0 });
  });
});

describe('decision cache', () => {
  it('answers a repeated cacheable check from the cache, without asking the gateway', async () => {
    const agentId = await gateway.createAgent('cache-agent');
    const cached = await client({ agentId });
    const first = await cached.check('CrmPlugin', 'GetCustomer', { id: 'cus_1' }, { data_class: 'public' });
    expect(first).toMatchObject({ via: 'grpc', cacheable: true });
    await gateway.auditEntries(`agentId=${agentId}&source=pdp`, (found) => found.length === 1);
    const second = await cached.check('CrmPlugin', 'GetCustomer', { id: 'cus_1' }, { data_class: 'public' });
    expect(second).toMatchObject({ via: 'cache', decisionId: first.decisionId });
    // A different question is not the same cache entry.
    expect(await cached.check('CrmPlugin', 'GetCustomer', { id: 'cus_2' }, { data_class: 'public' })).toMatchObject({ via: 'grpc' });
    await gateway.auditEntries(`agentId=${agentId}&source=pdp`, (found) => found.length === 2);
    await sleep(300);
    expect((await gateway.admin<{ entries: unknown[] }>('GET', `/admin/audit?agentId=${agentId}&source=pdp`)).body.entries).toHaveLength(2);
  });

  it('asks the gateway every time for a decision it marked not cacheable', async () => {
    const uncached = await client();
    const first = await uncached.check('SearchPlugin', 'Query', { q: 'x' });
    const second = await uncached.check('SearchPlugin', 'Query', { q: 'x' });
    expect(first).toMatchObject({ cacheable: false, via: 'grpc' });
    expect(second).toMatchObject({ via: 'grpc' });
    expect(second.decisionId).not.toBe(first.decisionId);
  });

  it('a revocation of the agent empties the cache within a second', async () => {
    const agentId = await gateway.createAgent('revoked-agent');
    const cached = await client({ agentId });
    await cached.check('WeatherPlugin', 'Forecast', { city: 'Oslo' });
    expect(await cached.check('WeatherPlugin', 'Forecast', { city: 'Oslo' })).toMatchObject({ via: 'cache' });
    expect((await gateway.admin('DELETE', `/admin/agents/${agentId}`)).status).toBe(200);
    const { error, afterMs } = await firstFailure(() => cached.check('WeatherPlugin', 'Forecast', { city: 'Oslo' }), 1000);
    expect(error).toBeInstanceOf(GatewayRejectedError);
    expect(error).toMatchObject({ code: 'permission_denied' });
    expect(afterMs).toBeLessThan(1000);
  });

  it('a policy change empties the cache at once', async () => {
    const cached = await client();
    expect(await cached.check('ReportPlugin', 'Export')).toMatchObject({ policy: 'default' });
    expect(await cached.check('ReportPlugin', 'Export')).toMatchObject({ via: 'cache' });
    await putPolicy('no-reports', 'name: no-reports\nmatch: { plugin: ReportPlugin }\nrules:\n  - condition: "true"\n    action: deny\n    reason: Reports are paused\n');
    const { error, afterMs } = await firstFailure(() => cached.check('ReportPlugin', 'Export'), 1000);
    expect(error).toBeInstanceOf(PolicyDeniedError);
    expect(error).toMatchObject({ result: { policy: 'no-reports', via: 'grpc' } });
    expect(afterMs).toBeLessThan(1000);
  });
});

describe('transports', () => {
  it('falls back to HTTP when gRPC cannot connect', async () => {
    const fallback = await client({ grpcAddress: `127.0.0.1:${await freePort()}`, throwOnDenied: false });
    expect(await fallback.check('FilePlugin', 'ReadFile', { path: '/etc/passwd' })).toMatchObject({ via: 'http', decision: 'deny', policy: 'block-sensitive-files', rule: 'system-paths' });
    const allowed = await fallback.check('FilePlugin', 'ReadFile', { path: '/tmp/a' });
    expect(allowed).toMatchObject({ via: 'http', allowed: true });
    expect(allowed.decisionId).toMatch(/^aud_/);
  });

  it('tries gRPC again grpcRetrySeconds after falling back, and stays on it once it answers', async () => {
    const relay = await TcpRelay.listen(await freePort(), gateway.grpcPort);
    await relay.close();
    // No cache: once the Subscribe stream connects, a cached HTTP answer would stand in for every later check.
    const recovering = await client({ grpcAddress: `127.0.0.1:${relay.port}`, grpcRetrySeconds: 0.2, cache: false });
    expect(await recovering.check('FilePlugin', 'ReadFile', { path: '/tmp/a' })).toMatchObject({ via: 'http' });
    await relay.open();
    try {
      // grpc-js backs off its reconnects (1 s, then longer): the client keeps asking over HTTP meanwhile.
      const deadline = Date.now() + 20_000;
      let via = 'http';
      while (via !== 'grpc' && Date.now() < deadline) {
        via = (await recovering.check('FilePlugin', 'ReadFile', { path: '/tmp/a' })).via;
        await sleep(100);
      }
      expect(via).toBe('grpc');
      expect(await recovering.check('FilePlugin', 'ReadFile', { path: '/tmp/b' })).toMatchObject({ via: 'grpc' });
    } finally {
      await relay.close();
    }
  });
});

describe('lifecycle', () => {
  it('lets Node exit once close() resolved, after following Subscribe', async () => {
    const child = spawn(process.execPath, [path.join(__dirname, 'support', 'check-and-close.js')], {
      env: { PATH: process.env.PATH ?? '', GATEWAY_URL: gateway.url, GRPC_ADDRESS: `127.0.0.1:${gateway.grpcPort}`, API_KEY: gateway.apiKey, AGENT_ID: gateway.agents.reader, WAL: tempWal() },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const outcome = await Promise.race([exited, sleep(8000).then(() => 'still running' as const)]);
    child.kill('SIGKILL');
    expect({ output, outcome }).toEqual({ output: 'closed\n', outcome: 0 });
  });
});

describe('audit mode (MODE=audit)', () => {
  let auditing: SdkGateway;
  beforeAll(async () => {
    auditing = await SdkGateway.start({ MODE: 'audit' });
  }, 120_000);
  afterAll(() => auditing?.stop());

  // The Python SDK's Decision.enforced: without it an allowed would-be denial looks like any allow.
  it.each([
    ['gRPC', {}],
    ['HTTP', { grpcAddress: '127.0.0.1:1' }],
  ])('says a would-be denial was let through (enforced false), over %s', async (_transport, options) => {
    const shadow = await client({ gatewayUrl: auditing.url, grpcAddress: `127.0.0.1:${auditing.grpcPort}`, apiKey: auditing.apiKey, agentId: auditing.agents.reader, ...options });
    expect(await shadow.check('FilePlugin', 'ReadFile', { path: '/etc/passwd' })).toMatchObject({ allowed: true, enforced: false, policy: 'block-sensitive-files' });
    expect(await shadow.check('FilePlugin', 'ReadFile', { path: '/tmp/notes.txt' })).toMatchObject({ allowed: true, enforced: true });
  });
});

describe('shared decision cases', () => {
  it.each(['grpc', 'http'])('every case gets its expected answer over %s', async (transport) => {
    const grpcAddress = transport === 'grpc' ? `127.0.0.1:${gateway.grpcPort}` : `127.0.0.1:${await freePort()}`;
    const byAgent = new Map<string, GovernanceClient>();
    for (const agent of DECISION_CASES.agents) byAgent.set(agent.name, await client({ agentId: gateway.agents[agent.name], grpcAddress, throwOnDenied: false, cache: false }));
    const answers = [];
    for (const decisionCase of DECISION_CASES.cases) {
      const result = await byAgent.get(decisionCase.agent)!.check(decisionCase.plugin, decisionCase.function, decisionCase.args, decisionCase.context);
      answers.push({ name: decisionCase.name, decision: result.decision, policy: result.policy, via: result.via });
    }
    expect(answers).toEqual(DECISION_CASES.cases.map((decisionCase) => ({ name: decisionCase.name, ...decisionCase.expect, via: transport })));
  });
});
