import { call, TestResponse } from './support/http-client';
import { createAgent, TestAgent } from './support/org-fixtures';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * A flood of approvals cannot hide a real one (docs/approvals.md "Listing and limits"): each agent
 * has at most APPROVALS_MAX_PENDING_PER_AGENT pending approvals (beyond it its held requests are
 * denied, naming the cap), and the list pages with an opaque cursor, in a stable order, filtered
 * by agent.
 */

const CAP = 4;

let upstream: TestUpstream;
let gateway: TestGateway;
let org: TestOrganization;
let flooder: TestAgent;
let honest: TestAgent;

interface ApprovalItem {
  id: string;
  agentId: string;
  status: string;
  createdAt: string;
}
interface ApprovalPage {
  approvals: ApprovalItem[];
  nextCursor: string | null;
}

beforeAll(async () => {
  upstream = await startUpstream();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url, APPROVALS_MAX_PENDING_PER_AGENT: String(CAP) });
  org = await createOrganization(gateway, 'enterprise', 'Approval flood org');
  const yaml = 'name: refunds-held\nmatch: { action: "write:refunds*" }\nrules:\n  - condition: args.amount > 100\n    action: require_approval\n    reason: Refunds over 100 need a person\n';
  const put = await call(gateway.url, 'PUT', '/admin/policies/refunds-held', { adminToken: org.adminToken, body: yaml, headers: { 'content-type': 'application/yaml' } });
  expect([200, 201]).toContain(put.status);
  flooder = await createAgent(gateway, org, { name: 'flooder', trustTier: 'verified' });
  honest = await createAgent(gateway, org, { name: 'honest', trustTier: 'verified' });
});

afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

function refund(agent: TestAgent, n: number): Promise<TestResponse> {
  return call(gateway.url, 'POST', `/proxy/refunds/${n}`, { bearer: agent.token, body: { amount: 500 + n } });
}

function list(query: string): Promise<TestResponse<ApprovalPage>> {
  return call<ApprovalPage>(gateway.url, 'GET', `/admin/approvals?${query}`, { adminToken: org.adminToken });
}

describe('the per-agent cap on pending approvals', () => {
  it('denies an agent’s held requests beyond the cap, naming it, while another agent still asks', async () => {
    for (let n = 0; n < CAP; n++) expect((await refund(flooder, n)).status).toBe(202);
    const beyond = await refund(flooder, CAP);
    expect(beyond.status).toBe(403);
    expect(String(beyond.body.message)).toContain(`${CAP} pending approvals`);
    expect(String(beyond.body.message)).toContain('APPROVALS_MAX_PENDING_PER_AGENT');
    expect(upstream.received('/refunds')).toHaveLength(0);
    const real = await refund(honest, 99);
    expect([real.status, real.body.error]).toEqual([202, 'approval_required']);
    const pending = await list(`status=pending&agentId=${flooder.id}&limit=100`);
    expect(pending.body.approvals).toHaveLength(CAP);
  });

  it('lets the agent ask again once one of its approvals is decided', async () => {
    const pending = await list(`status=pending&agentId=${flooder.id}`);
    const rejected = await call(gateway.url, 'POST', `/admin/approvals/${pending.body.approvals[0].id}/reject`, { adminToken: org.adminToken, body: {} });
    expect(rejected.status).toBe(200);
    expect((await refund(flooder, 50)).status).toBe(202);
    expect((await refund(flooder, 51)).status).toBe(403);
  });
});

describe('listing approvals', () => {
  it('pages through every approval once, newest first, with an opaque cursor', async () => {
    const whole = await list('limit=500');
    expect(whole.status).toBe(200);
    expect(whole.body.nextCursor).toBeNull();
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: TestResponse<ApprovalPage> = await list(`limit=2${cursor === null ? '' : `&cursor=${cursor}`}`);
      expect(page.status).toBe(200);
      expect(page.body.approvals.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.approvals.map((approval) => approval.id));
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor !== null && pages < 20);
    expect(seen).toEqual(whole.body.approvals.map((approval) => approval.id));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBe(CAP + 2);
    const created = whole.body.approvals.map((approval) => approval.createdAt);
    expect([...created].sort().reverse()).toEqual(created);
  });

  it('filters by agent, and by status and agent together', async () => {
    const mine = await list(`agentId=${honest.id}`);
    expect(mine.body.approvals.map((approval) => approval.agentId)).toEqual([honest.id]);
    const rejected = await list(`status=rejected&agentId=${flooder.id}`);
    expect(rejected.body.approvals).toHaveLength(1);
    expect((await list(`status=rejected&agentId=${honest.id}`)).body.approvals).toHaveLength(0);
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=501', 'limit'],
    ['limit=ten', 'limit'],
    ['cursor=not-a-cursor', 'cursor'],
    [`cursor=${Buffer.from('2026-01-01T00:00:00Z|x').toString('base64url')}`, 'cursor'],
  ])('refuses ?%s with a 400 naming %s', async (query, field) => {
    const answer = await list(query);
    expect(answer.status).toBe(400);
    expect(String((answer.body as unknown as { message: string }).message)).toContain(field);
  });

  it('never shows another organization’s approvals', async () => {
    const other = await createOrganization(gateway, 'enterprise', 'Other approvals org');
    const answer = await call<ApprovalPage>(gateway.url, 'GET', `/admin/approvals?agentId=${flooder.id}`, { adminToken: other.adminToken });
    expect(answer.body.approvals).toHaveLength(0);
  });
});
