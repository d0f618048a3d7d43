import { ApprovalPendingError, GovernanceClient, GovernanceOptions, PolicyDeniedError, SoftDenial } from '../src';
import { SdkGateway, sleep, tempWal } from './support/sdk-gateway';

/**
 * guard() and a `require_approval` rule against a real gateway (docs/approvals.md): guard waits
 * while an admin decides, runs the call once when approved, and denies when rejected or when its
 * bounded wait ends; check() hands the pending approval to callers who wait themselves.
 */

const POLICY = 'name: sdk-approvals\nmatch: { plugin: PaymentsPlugin, function: Refund }\nrules:\n  - condition: args.amount > 100\n    action: require_approval\n    reason: Refunds over 100 need a person\n';

let gateway: SdkGateway;
const clients: GovernanceClient[] = [];

async function client(agentId: string, options: Partial<GovernanceOptions> = {}): Promise<GovernanceClient> {
  const created = await GovernanceClient.create({
    gatewayUrl: gateway.url,
    grpcAddress: `127.0.0.1:${gateway.grpcPort}`,
    apiKey: gateway.apiKey,
    agentId,
    auditLogPath: tempWal(),
    auditFlushMs: 50,
    ...options,
  });
  clients.push(created);
  return created;
}

interface Approval {
  id: string;
  status: string;
  agentId: string;
  action: string;
}

/** The agent's pending approval, once its guarded call has opened it. */
async function pendingApprovalOf(agentId: string): Promise<Approval> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const listed = await gateway.admin<{ approvals: Approval[] }>('GET', '/admin/approvals?status=pending');
    const found = listed.body.approvals.find((approval) => approval.agentId === agentId);
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`no pending approval for ${agentId}: ${listed.text}`);
    await sleep(50);
  }
}

async function approvalStatus(id: string): Promise<string | undefined> {
  const listed = await gateway.admin<{ approvals: Approval[] }>('GET', '/admin/approvals');
  return listed.body.approvals.find((approval) => approval.id === id)?.status;
}

beforeAll(async () => {
  gateway = await SdkGateway.start();
  const put = await gateway.admin('PUT', '/admin/policies/sdk-approvals', POLICY, { 'content-type': 'application/yaml' });
  expect([200, 201]).toContain(put.status);
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((each) => each.close()));
  await gateway?.stop();
});

describe('guard() and require_approval', () => {
  it.each<[string, Partial<GovernanceOptions>]>([
    ['gRPC', {}],
    ['the HTTP fallback', { grpcAddress: '127.0.0.1:1' }],
  ])('waits while an admin approves, then runs the call once (over %s)', async (_transport, options) => {
    const agentId = await gateway.createAgent(`approve-${options.grpcAddress === undefined ? 'grpc' : 'http'}`);
    const governance = await client(agentId, options);
    let runs = 0;
    const guarded = governance.guard('PaymentsPlugin', 'Refund', { amount: 500, order: 'o-1' }, () => {
      runs += 1;
      return 'refunded';
    });
    const approval = await pendingApprovalOf(agentId);
    expect(approval.action).toBe('PaymentsPlugin.Refund');
    await sleep(300);
    expect(runs).toBe(0);
    expect((await gateway.admin('POST', `/admin/approvals/${approval.id}/approve`, { comment: 'ok' })).status).toBe(200);

    expect(await guarded).toBe('refunded');
    expect(runs).toBe(1);
    expect(await approvalStatus(approval.id)).toBe('used');
  }, 30_000);

  it('denies when an admin rejects, without running the call; softly when throwOnDenied is false', async () => {
    const agentId = await gateway.createAgent('reject');
    const governance = await client(agentId);
    let runs = 0;
    const guarded = governance.guard('PaymentsPlugin', 'Refund', { amount: 300 }, () => (runs += 1));
    const outcome = guarded.then(
      () => new Error('guard resolved'),
      (error: unknown) => error,
    );
    const approval = await pendingApprovalOf(agentId);
    await gateway.admin('POST', `/admin/approvals/${approval.id}/reject`, { comment: 'no' });
    const error = await outcome;
    expect(error).toBeInstanceOf(PolicyDeniedError);
    expect((error as PolicyDeniedError).result).toMatchObject({ allowed: false, decision: 'deny', policy: 'sdk-approvals', reason: `Approval ${approval.id} is rejected: Refunds over 100 need a person` });

    const soft = await client(agentId, { throwOnDenied: false });
    const softly = soft.guard('PaymentsPlugin', 'Refund', { amount: 301 }, () => (runs += 1));
    const second = await pendingApprovalOf(agentId);
    await gateway.admin('POST', `/admin/approvals/${second.id}/reject`, {});
    const denial = await softly;
    expect(denial).toBeInstanceOf(SoftDenial);
    expect((denial as SoftDenial).result.reason).toMatch(/^Approval appr_\S+ is rejected/);
    expect(runs).toBe(0);
  }, 30_000);

  it('gives up when nobody decides within approvalWaitSeconds, without running the call', async () => {
    const agentId = await gateway.createAgent('nobody-decides');
    const governance = await client(agentId, { approvalWaitSeconds: 1 });
    let runs = 0;
    const started = Date.now();
    const error = await governance.guard('PaymentsPlugin', 'Refund', { amount: 200 }, () => (runs += 1)).then(
      () => new Error('guard resolved'),
      (thrown: unknown) => thrown,
    );
    const waitedMs = Date.now() - started;
    expect(error).toBeInstanceOf(PolicyDeniedError);
    expect((error as PolicyDeniedError).result.reason).toMatch(/^Approval appr_\S+ was not decided within the 1 s guard\(\) waits/);
    expect(waitedMs).toBeGreaterThanOrEqual(900);
    expect(waitedMs).toBeLessThan(5000);
    expect(runs).toBe(0);
    // The approval stays pending: a person may still approve it for a later retry.
    expect(await approvalStatus((await pendingApprovalOf(agentId)).id)).toBe('pending');
  }, 30_000);
});

describe('check() and a pending call', () => {
  it('throws ApprovalPendingError with the approval, which waitForApproval and a retry with it use once', async () => {
    const agentId = await gateway.createAgent('manual');
    const governance = await client(agentId);
    const args = { amount: 900 };
    const pending = await governance.check('PaymentsPlugin', 'Refund', args).then(
      () => new Error('check resolved'),
      (error: unknown) => error,
    );
    expect(pending).toBeInstanceOf(ApprovalPendingError);
    const { approvalId, expiresAt } = pending as ApprovalPendingError;
    expect(approvalId).toMatch(/^appr_/);
    expect(Date.parse(expiresAt)).toBeGreaterThan(Date.now());
    expect(await governance.waitForApproval(approvalId, 0)).toBe('pending');

    await gateway.admin('POST', `/admin/approvals/${approvalId}/approve`, {});
    expect(await governance.waitForApproval(approvalId)).toBe('approved');
    // Asking where it stands spent nothing: the retry is what uses it, once.
    expect(await governance.check('PaymentsPlugin', 'Refund', args, {}, { approvalId })).toMatchObject({ allowed: true, decision: 'allow' });
    await expect(governance.check('PaymentsPlugin', 'Refund', args, {}, { approvalId })).rejects.toMatchObject({ result: { decision: 'deny', reason: `Approval ${approvalId} was already used: an approval lets one request through` } });
    expect(await governance.waitForApproval(approvalId)).toBe('used');

    const soft = await client(agentId, { throwOnDenied: false });
    expect(await soft.check('PaymentsPlugin', 'Refund', { amount: 901 })).toMatchObject({ allowed: false, decision: 'pending', approvalId: expect.stringMatching(/^appr_/), approvalExpiresAt: expect.any(String) });
  }, 30_000);
});

