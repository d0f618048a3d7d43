import { GatewayTimeoutError, GatewayUnavailableError, GovernanceClient, GovernanceOptions } from '../src';
import { AuditEntry, forwarder, freePort, SdkGateway, stalledServer, tempWal } from './support/sdk-gateway';

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

  // docs: README "Failure modes": throwOnDenied says how a denial is shown, never whether a call runs.
  it('fail-closed refuses on a timeout whatever throwOnDenied says: check throws, guard does not run the call', async () => {
    const lenient = await client({ ...addresses, timeoutSeconds: 0.3, throwOnDenied: false, plugins: { SoftPlugin: { throwOnDenied: false } } });
    await expect(lenient.check('FilePlugin', 'ReadFile', { path: '/tmp/a' })).rejects.toBeInstanceOf(GatewayTimeoutError);
    let ran = false;
    await expect(lenient.guard('SoftPlugin', 'Run', {}, () => (ran = true))).rejects.toBeInstanceOf(GatewayTimeoutError);
    expect(ran).toBe(false);
    expect(lenient.pendingAudit).toBe(0);
  });

  it('fail-open allows on a timeout, with a failure-mode audit event waiting to be sent', async () => {
    const open = await client({ ...addresses, timeoutSeconds: 0.3, failureMode: 'fail-open' });
    const result = await open.check('FilePlugin', 'ReadFile', { path: '/tmp/a' });
    expect(result).toMatchObject({ allowed: true, via: 'failure-mode' });
    expect(result.reason).toMatch(/^fail-open: allowed without a gateway decision \((gRPC|HTTP)\b.+\)$/);
    expect(open.pendingAudit).toBe(1);
  });

  it('a per-plugin timeoutSeconds applies to that plugin only', async () => {
    const quick = await client({ ...addresses, timeoutSeconds: 30, plugins: { QuickPlugin: { timeoutSeconds: 0.3 } } });
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

  it('fail-closed (the default) throws GatewayUnavailableError', async () => {
    const closed = await client({ gatewayUrl: `http://127.0.0.1:${await freePort()}`, grpcAddress: `127.0.0.1:${await freePort()}`, throwOnDenied: false });
    await expect(closed.check('FilePlugin', 'ReadFile', { path: '/tmp/a' })).rejects.toBeInstanceOf(GatewayUnavailableError);
    expect(closed.pendingAudit).toBe(0);
  });

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
