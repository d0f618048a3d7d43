import { GatewayTimeoutError, GatewayUnavailableError, GovernanceClient, GovernanceOptions, SoftDenial } from '../src';
import { AuditEntry, DECISION_CASES, forwarder, freePort, SdkGateway, stalledServer, tempWal, UNRESOLVABLE_HOST } from './support/sdk-gateway';

/**
 * What the client does without a decision: timeouts against a server that never answers, and
 * the failure modes against a gateway that cannot be reached (fail-open's audit event arriving
 * once the gateway is back).
 */

const clients: GovernanceClient[] = [];

async function client(options: Partial<GovernanceOptions> & Pick<GovernanceOptions, 'gatewayUrl'>): Promise<GovernanceClient> {
  const created = await GovernanceClient.create({ apiKey: 'agk_unused', agentId: 'agent_unused', auditLogPath: tempWal(), ...options });
  clients.push(created);
  return created;
}

async function elapsed(promise: Promise<unknown>): Promise<number> {
  const started = Date.now();
  await promise.catch(() => undefined);
  return Date.now() - started;
}

afterEach(async () => {
  await Promise.all(clients.splice(0).map((each) => each.close()));
});

describe('timeout against a stalled server', () => {
  let stalled: Awaited<ReturnType<typeof stalledServer>>;
  let addresses: { gatewayUrl: string; grpcAddress: string };

  beforeAll(async () => {
    stalled = await stalledServer();
    addresses = { gatewayUrl: `http://127.0.0.1:${stalled.port}`, grpcAddress: `127.0.0.1:${stalled.port}` };
  });
  afterAll(() => stalled.close());

  it('throws GatewayTimeoutError after timeoutSeconds by default', async () => {
    const check = (await client({ ...addresses, timeoutSeconds: 0.5 })).check('FilePlugin', 'ReadFile', { path: '/tmp/a' });
    const tookMs = await elapsed(check);
    await expect(check).rejects.toBeInstanceOf(GatewayTimeoutError);
    expect(tookMs).toBeGreaterThanOrEqual(450);
    expect(tookMs).toBeLessThan(3000);
  });

  // README "Failure modes": throwOnDenied says how a denial is shown, never whether a call runs.
  it('fail-closed denies on a timeout whatever throwOnDenied says, and the denial waits to be sent to the trail', async () => {
    const lenient = await client({ ...addresses, timeoutSeconds: 0.3, throwOnDenied: false });
    const result = await lenient.check('FilePlugin', 'ReadFile', { path: '/tmp/a' });
    expect(result).toMatchObject({ allowed: false, decision: 'deny', via: 'timeout' });
    expect(result.reason).toMatch(/^timeout: denied without a gateway decision \(gRPC Evaluate: no answer within 300 ms\)$/);
    let ran = false;
    expect(await lenient.guard('FilePlugin', 'ReadFile', { path: '/tmp/a' }, () => (ran = true))).toBeInstanceOf(SoftDenial);
    expect(ran).toBe(false);
    expect(lenient.pendingAudit).toBe(2);
  });

  it('fail-open allows on a timeout, with an audit event saying so waiting to be sent', async () => {
    const open = await client({ ...addresses, timeoutSeconds: 0.3, failureMode: 'fail-open' });
    const result = await open.check('FilePlugin', 'ReadFile', { path: '/tmp/a' });
    expect(result).toMatchObject({ allowed: true, via: 'timeout' });
    expect(result.reason).toMatch(/^timeout: allowed without a gateway decision \(gRPC Evaluate: no answer within 300 ms\)$/);
    expect(open.pendingAudit).toBe(1);
  });

  it('a per-plugin timeoutSeconds applies to that plugin only', async () => {
    // Client-wide 3 s: close() then spends at most that trying to send the quick call's denial.
    const quick = await client({ ...addresses, timeoutSeconds: 3, plugins: { QuickPlugin: { timeoutSeconds: 0.3 } } });
    const check = quick.check('QuickPlugin', 'Run');
    const tookMs = await elapsed(check);
    await expect(check).rejects.toBeInstanceOf(GatewayTimeoutError);
    expect(tookMs).toBeLessThan(3000);
    const slow = quick.check('OtherPlugin', 'Run');
    const outcome = await Promise.race([slow.then(() => 'answered', () => 'failed'), new Promise((resolve) => setTimeout(() => resolve('still waiting'), 1500))]);
    expect(outcome).toBe('still waiting');
  });
});

describe('failure modes against an unreachable gateway', () => {
  let gateway: SdkGateway;

  beforeAll(async () => {
    gateway = await SdkGateway.start();
  }, 120_000);
  afterAll(() => gateway?.stop());

  it('fail-open allows, and its failure-mode audit event reaches the gateway once it is back', async () => {
    const agentId = await gateway.createAgent('fail-open-agent');
    const deadPort = await freePort();
    const open = await client({
      gatewayUrl: `http://127.0.0.1:${deadPort}`,
      grpcAddress: `127.0.0.1:${await freePort()}`,
      apiKey: gateway.apiKey,
      agentId,
      failureMode: 'fail-open',
      auditFlushMs: 100,
    });
    const result = await open.check('FilePlugin', 'ReadFile', { path: '/etc/passwd' });
    expect(result).toMatchObject({ allowed: true, via: 'failure-mode' });
    expect(result.reason).toMatch(/^fail-open: allowed without a gateway decision \(HTTP .+\)$/);
    expect(open.pendingAudit).toBe(1);
    // guard(): one event for the call, its summary flagged as the other SDKs flag it.
    expect(await open.guard('FilePlugin', 'ReadText', { path: '/etc/hosts' }, () => 'hosts')).toBe('hosts');
    expect(open.pendingAudit).toBe(2);

    const back = await forwarder(deadPort, Number(new URL(gateway.url).port));
    try {
      const isFailOpen = (entry: AuditEntry) => entry.kind === 'outcome' && (entry.reason ?? '').startsWith('fail-open');
      const entries = await gateway.auditEntries(`agentId=${agentId}&source=check`, (found) => found.filter(isFailOpen).length >= 2);
      expect(entries.filter(isFailOpen).sort((a, b) => a.action.localeCompare(b.action))).toEqual([
        expect.objectContaining({ action: 'FilePlugin.ReadFile', decision: 'allow', reason: result.reason }),
        expect.objectContaining({ action: 'FilePlugin.ReadText', decision: 'allow', reason: expect.stringMatching(/^fail-open: allowed without a gateway decision \(HTTP .+\); returned string of 5 characters$/) }),
      ]);
      for (let waited = 0; open.pendingAudit > 0 && waited < 5000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(open.pendingAudit).toBe(0);
    } finally {
      await open.close();
      await back.close();
    }
  });
});

// sdk/fixtures/decision-cases.json `timeouts`, the cases every SDK runs: gRPC stalls (a deadline
// is not a cue for the HTTP fallback), and the audit event reaches the gateway over HTTP.
describe('shared timeout cases', () => {
  let gateway: SdkGateway;
  let stalled: Awaited<ReturnType<typeof stalledServer>>;

  beforeAll(async () => {
    [gateway, stalled] = await Promise.all([SdkGateway.start(), stalledServer()]);
  }, 120_000);
  afterAll(async () => {
    await stalled?.close();
    await gateway?.stop();
  });

  it.each(DECISION_CASES.timeouts.map((shared) => [shared.name, shared] as const))('%s', async (_name, shared) => {
    // An agent of the fixture's kind for each case, so that each case's trail is its own.
    const kind = DECISION_CASES.agents.find((agent) => agent.name === shared.agent)!;
    const agentId = await gateway.createAgent(`${kind.name}-${shared.failureMode}-${shared.throwOnDenied}`, kind.trustTier, kind.tags);
    const options = { gatewayUrl: gateway.url, grpcAddress: `127.0.0.1:${stalled.port}`, apiKey: gateway.apiKey, agentId, auditFlushMs: 50 };
    const timing = await client({ ...options, timeoutSeconds: shared.timeoutSeconds, failureMode: shared.failureMode, throwOnDenied: shared.throwOnDenied });
    const checked = await timing.check(shared.plugin, shared.function, shared.args, shared.context).then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
    if (shared.expect.throws) {
      expect(checked).toEqual({ error: expect.any(GatewayTimeoutError) });
      expect((checked as { error: Error }).error.message).toContain('gRPC Evaluate: no answer within 300 ms');
    } else {
      expect(checked).toEqual({ result: expect.objectContaining({ decision: shared.expect.decision, via: shared.expect.source }) });
    }
    expect(timing.pendingAudit).toBe(1);
    await timing.flushAudit();
    const marker = (entry: AuditEntry) => entry.kind === 'outcome' && entry.action === `${shared.plugin}.${shared.function}` && (entry.reason ?? '').startsWith('timeout: ');
    const [entry] = (await gateway.auditEntries(`agentId=${agentId}&source=check`, (found) => found.some(marker))).filter(marker);
    expect(entry.decision).toBe(shared.expect.auditedDecision);
    let runs = false;
    await timing.guard(shared.plugin, shared.function, shared.args, () => (runs = true), shared.context).catch(() => undefined);
    expect(runs).toBe(shared.expect.runs);
  });
});

// sdk/fixtures/decision-cases.json `unreachable`: nothing listens at either address (a closed
// loopback port, or a name that never resolves). Fail-closed throws at once, whatever
// throwOnDenied says, and records nothing (no call happened); fail-open allows and says so.
describe('shared unreachable cases', () => {
  async function addresses(kind: 'closed-port' | 'unresolvable'): Promise<Pick<GovernanceOptions, 'gatewayUrl' | 'grpcAddress'>> {
    if (kind === 'unresolvable') return { gatewayUrl: `http://${UNRESOLVABLE_HOST}:3000`, grpcAddress: `${UNRESOLVABLE_HOST}:50051` };
    return { gatewayUrl: `http://127.0.0.1:${await freePort()}`, grpcAddress: `127.0.0.1:${await freePort()}` };
  }

  it.each(DECISION_CASES.unreachable.map((shared) => [shared.name, shared] as const))('%s', async (_name, shared) => {
    const unreachable = await client({
      ...(await addresses(shared.address)),
      timeoutSeconds: shared.timeoutSeconds,
      failureMode: shared.failureMode,
      throwOnDenied: shared.throwOnDenied,
    });
    const checked = await unreachable.check(shared.plugin, shared.function, shared.args, shared.context).then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
    if (shared.expect.throws) {
      // Not a timeout: the answer that nothing is there came at once. The message names the cause.
      expect(checked).toEqual({ error: expect.any(GatewayUnavailableError) });
      const cause = shared.address === 'closed-port' ? 'ECONNREFUSED' : UNRESOLVABLE_HOST;
      expect((checked as { error: Error }).error.message).toMatch(new RegExp(`^HTTP /v1/check: fetch failed \\(.*${cause.replace(/\./g, '\\.')}`));
    } else {
      expect(checked).toEqual({ result: expect.objectContaining({ allowed: true, decision: 'allow', via: 'failure-mode', enforced: false }) });
    }
    expect(unreachable.pendingAudit).toBe(shared.expect.auditEvents);

    let runs = false;
    const guarded = await unreachable.guard(shared.plugin, shared.function, shared.args, () => (runs = true), shared.context).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    expect(runs).toBe(shared.expect.runs);
    expect(guarded).toEqual(shared.expect.throws ? { error: expect.any(GatewayUnavailableError) } : { value: true });
    expect(unreachable.pendingAudit).toBe(shared.expect.auditEvents * 2);
  });
});
