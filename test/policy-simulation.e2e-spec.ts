import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { call, TestResponse } from './support/http-client';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/** POST /admin/policies/simulate and /admin/policies/backtest, on stored, proposed and replayed policies. */

interface RuleTrace {
  rule: string;
  action: string;
  result: boolean | 'not-reached';
  rateLimit?: { limit: string; retryAfterSeconds: number };
}

interface PolicyTrace {
  policy: string;
  applicable: boolean;
  rules: RuleTrace[];
}

interface DecisionBody {
  decision: string;
  policy: string;
  rule: string | null;
  reason: string;
  rateLimit?: { limit: string; retryAfterSeconds: number };
}

interface SimulationBody extends DecisionBody {
  enforced: boolean;
  policyVersion: number | null;
  trace: PolicyTrace[];
}

interface Flip {
  id: string;
  timestamp: string;
  agentId: string | null;
  action: string;
  before: DecisionBody;
  after: DecisionBody;
}

interface BacktestBody {
  from: string;
  to: string;
  examined: number;
  skipped: number;
  unchanged: number;
  allowToDeny: number;
  denyToAllow: number;
  byPolicy: Array<{ policy: string; allowToDeny: number; denyToAllow: number }>;
  flips: Flip[];
  truncated: boolean;
}

interface AuditEntry {
  id: string;
  timestamp: string;
  agentId: string | null;
  action: string;
  method: string | null;
  path: string | null;
  decision: string;
  policyName: string | null;
  rule: string | null;
  reason: string | null;
  input: Record<string, unknown> | null;
}

interface ErrorBody {
  error: string;
  message: string;
  errors?: Array<{ line: number; column: number; message: string; policy?: string; rule?: string }>;
}

interface CreatedAgent {
  id: string;
  token: string;
}

const YAML = { 'content-type': 'application/yaml' };

const doc = (...lines: string[]): string => `${lines.join('\n')}\n`;

/** The simulation organization's stored policies, in creation order. */
const STORED = [
  doc(
    'name: untrusted-writes',
    'match: { action: "write:*" }',
    'rules:',
    '  - name: unverified-cannot-write',
    '    condition: agent.trust_tier < verified',
    '    action: deny',
    '    reason: Unverified agents cannot write',
  ),
  doc('name: trusted-deletes', 'match: { action: "delete:*" }', 'rules:', '  - condition: agent.trust_tier < trusted', '    action: deny', '    reason: Only trusted agents delete'),
  doc(
    'name: write-checks',
    'match: { action: "write:*" }',
    'rules:',
    '  - name: no-drafts',
    '    condition: args.draft == true',
    '    action: deny',
    '    reason: No drafts',
    '  - condition: args.size > 100',
    '    action: deny',
    '    reason: Too big',
  ),
];

let gateway: TestGateway;
let upstream: http.Server;
const upstreamRequests: Array<{ method: string; url: string }> = [];

beforeAll(async () => {
  upstream = http.createServer((request, response) => {
    upstreamRequests.push({ method: request.method!, url: request.url! });
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ ok: true }));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const { port } = upstream.address() as AddressInfo;
  gateway = await startGateway({ UPSTREAM_URL: `http://127.0.0.1:${port}` });
});
afterAll(async () => {
  await gateway.close();
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
});

function admin<T>(org: TestOrganization, method: string, path: string, body?: unknown): Promise<TestResponse<T>> {
  return call<T>(gateway.url, method, path, { adminToken: org.adminToken, body, headers: typeof body === 'string' ? YAML : undefined });
}

async function storePolicies(org: TestOrganization, sources: string[]): Promise<void> {
  for (const source of sources) {
    const name = /^name: (\S+)/m.exec(source)![1];
    const response = await admin(org, 'PUT', `/admin/policies/${name}`, source);
    expect(response.status).toBe(201);
  }
}

async function createAgent(org: TestOrganization, name: string, trustTier: string): Promise<CreatedAgent> {
  const response = await admin<CreatedAgent>(org, 'POST', '/admin/agents', { name, trustTier });
  expect(response.status).toBe(201);
  return response.body;
}

function simulate(org: TestOrganization, body: Record<string, unknown>): Promise<TestResponse<SimulationBody>> {
  return admin<SimulationBody>(org, 'POST', '/admin/policies/simulate', body);
}

async function simulated(org: TestOrganization, body: Record<string, unknown>): Promise<SimulationBody> {
  const response = await simulate(org, body);
  expect(response.status).toBe(200);
  return response.body;
}

/** Polls the organization's proxy audit entries until `count` are there; newest first. */
async function proxyEntries(org: TestOrganization, count: number): Promise<AuditEntry[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const page = await admin<{ entries: AuditEntry[] }>(org, 'GET', '/admin/audit?source=proxy&limit=1000');
    expect(page.status).toBe(200);
    if (page.body.entries.length >= count) {
      expect(page.body.entries).toHaveLength(count);
      return page.body.entries;
    }
    if (Date.now() > deadline) throw new Error(`expected ${count} audit entries, found ${page.body.entries.length}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function before(entry: AuditEntry): DecisionBody {
  return { decision: entry.decision, policy: entry.policyName!, rule: entry.rule, reason: entry.reason! };
}

describe('POST /admin/policies/simulate on the stored policies', () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createOrganization(gateway, 'enterprise', 'Simulation org');
    await storePolicies(org, STORED);
  });

  it('denies an unverified write and traces every policy and rule', async () => {
    const response = await simulate(org, { input: { agent: { trust_tier: 'unverified' }, action: 'write:x' } });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      decision: 'deny',
      policy: 'untrusted-writes',
      rule: 'unverified-cannot-write',
      reason: 'Unverified agents cannot write',
      enforced: true,
      policyVersion: 3,
      trace: [
        { policy: 'untrusted-writes', applicable: true, rules: [{ rule: 'unverified-cannot-write', action: 'deny', result: true }] },
        { policy: 'trusted-deletes', applicable: false, rules: [] },
        {
          policy: 'write-checks',
          applicable: true,
          rules: [
            { rule: 'no-drafts', action: 'deny', result: 'not-reached' },
            { rule: 'write-checks#1', action: 'deny', result: 'not-reached' },
          ],
        },
      ],
    });
  });

  it('names an unnamed rule <policy>#<index>, 0-based', async () => {
    const body = await simulated(org, { input: { agent: { trust_tier: 'verified' }, action: 'write:x', args: { size: 500 } } });
    expect(body).toMatchObject({ decision: 'deny', policy: 'write-checks', rule: 'write-checks#1', reason: 'Too big' });
    expect(body.trace).toEqual([
      { policy: 'untrusted-writes', applicable: true, rules: [{ rule: 'unverified-cannot-write', action: 'deny', result: false }] },
      { policy: 'trusted-deletes', applicable: false, rules: [] },
      {
        policy: 'write-checks',
        applicable: true,
        rules: [
          { rule: 'no-drafts', action: 'deny', result: false },
          { rule: 'write-checks#1', action: 'deny', result: true },
        ],
      },
    ]);
    const deletes = await simulated(org, { input: { agent: { trust_tier: 'verified' }, action: 'delete:x' } });
    expect(deletes).toMatchObject({ decision: 'deny', policy: 'trusted-deletes', rule: 'trusted-deletes#0', reason: 'Only trusted agents delete' });
  });

  it('allows, naming the first matching policy, when no rule fires', async () => {
    const body = await simulated(org, { input: { agent: { trust_tier: 'verified' }, action: 'write:x', args: { size: 5, draft: false } } });
    expect(body).toMatchObject({ decision: 'allow', policy: 'untrusted-writes', rule: null, enforced: true, policyVersion: 3 });
    expect(body.trace.flatMap((policy) => policy.rules.map((rule) => rule.result))).toEqual([false, false, false]);
  });

  it('allows with the policy `default` when no policy matches', async () => {
    const body = await simulated(org, { input: { agent: { trust_tier: 'unverified' }, action: 'read:x' } });
    expect(body).toMatchObject({ decision: 'allow', policy: 'default', rule: null });
    expect(body.trace).toEqual([
      { policy: 'untrusted-writes', applicable: false, rules: [] },
      { policy: 'trusted-deletes', applicable: false, rules: [] },
      { policy: 'write-checks', applicable: false, rules: [] },
    ]);
  });

  it.each([
    ['untrusted', 'write:x', 'deny'],
    ['sandboxed', 'write:x', 'deny'],
    ['restricted', 'write:x', 'deny'],
    ['standard', 'write:x', 'allow'],
    ['verified', 'delete:x', 'deny'],
    ['standard', 'delete:x', 'deny'],
    ['elevated', 'delete:x', 'allow'],
    ['trusted', 'delete:x', 'allow'],
    ['privileged', 'delete:x', 'allow'],
  ])('compares the tier alias %s by rank: %s is %s', async (tier, action, decision) => {
    const body = await simulated(org, { input: { agent: { trust_tier: tier }, action } });
    expect(body.decision).toBe(decision);
  });

  it('uses an agent’s current record for agentId, over any agent given in the input', async () => {
    const agent = await createAgent(org, 'sim-agent', 'verified');
    const input = { agentId: agent.id, agent: { trust_tier: 'privileged' }, action: 'delete:x' };
    expect(await simulated(org, { input })).toMatchObject({ decision: 'deny', policy: 'trusted-deletes', rule: 'trusted-deletes#0' });
    const patched = await admin(org, 'PATCH', `/admin/agents/${agent.id}`, { trustTier: 'trusted' });
    expect(patched.status).toBe(200);
    expect(await simulated(org, { input })).toMatchObject({ decision: 'allow', policy: 'trusted-deletes', rule: null });
  });

  it('answers 404 for another organization’s agent or an unknown one', async () => {
    const other = await createOrganization(gateway, 'enterprise', 'Simulation other org');
    const foreign = await createAgent(other, 'foreign-agent', 'privileged');
    for (const agentId of [foreign.id, 'agent_0000000000000000']) {
      const response = await admin<ErrorBody>(org, 'POST', '/admin/policies/simulate', { input: { agentId, action: 'delete:x' } });
      expect(response.status).toBe(404);
      expect(response.body.error).toBe('not_found');
    }
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['missing input.action', { input: { agent: { trust_tier: 'verified' } } }, 'input.action'],
    ['a non-string input.action', { input: { action: 42 } }, 'input.action'],
    ['missing input', {}, 'input'],
    ['an unknown field', { input: { action: 'read:x' }, extra: true }, 'extra'],
    ['a non-boolean replace', { input: { action: 'read:x' }, replace: 'yes' }, 'replace'],
    ['an input that is a list', { input: [] }, 'input'],
    ['an input.agent that is a list', { input: { action: 'read:x', agent: [] } }, 'input.agent'],
    ['an input.delegation that is a list', { input: { action: 'read:x', delegation: [] } }, 'input.delegation'],
  ])('answers 400 invalid_request for %s', async (_what, body, field) => {
    const response = await admin<ErrorBody>(org, 'POST', '/admin/policies/simulate', body);
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_request');
    expect(response.body.message).toContain(field);
  });
});

describe('POST /admin/policies/simulate with proposed policies', () => {
  let org: TestOrganization;
  const unverifiedWrite = { agent: { trust_tier: 'unverified' }, action: 'write:x' };
  const relaxed = doc('name: untrusted-writes', 'match: { action: "write:*" }', 'rules:', '  - name: never', '    condition: agent.trust_tier < unverified', '    action: deny', '    reason: Never');
  const vault = { name: 'vault', match: { action: 'write:vault*' }, rules: [{ name: 'no-vault', condition: 'true', action: 'deny', reason: 'The vault is closed' }] };

  beforeAll(async () => {
    org = await createOrganization(gateway, 'enterprise', 'Proposed simulation org');
    await storePolicies(org, STORED);
  });

  it('lets a proposed YAML policy override the stored one of the same name, in its place', async () => {
    const body = await simulated(org, { input: unverifiedWrite, policies: relaxed });
    expect(body).toMatchObject({ decision: 'allow', policy: 'untrusted-writes', rule: null, policyVersion: null });
    expect(body.trace.map((policy) => [policy.policy, policy.rules.map((rule) => `${rule.rule}=${String(rule.result)}`)])).toEqual([
      ['untrusted-writes', ['never=false']],
      ['trusted-deletes', []],
      ['write-checks', ['no-drafts=false', 'write-checks#1=false']],
    ]);
  });

  it('appends a proposed list of policies after the stored ones', async () => {
    const body = await simulated(org, { input: { agent: { trust_tier: 'verified' }, action: 'write:vault/1' }, policies: [vault] });
    expect(body).toMatchObject({ decision: 'deny', policy: 'vault', rule: 'no-vault', reason: 'The vault is closed', policyVersion: null });
    expect(body.trace.map((policy) => policy.policy)).toEqual(['untrusted-writes', 'trusted-deletes', 'write-checks', 'vault']);
  });

  it('accepts one proposed policy object', async () => {
    const body = await simulated(org, { input: { agent: { trust_tier: 'privileged' }, action: 'write:vault/2' }, policies: vault });
    expect(body).toMatchObject({ decision: 'deny', policy: 'vault', rule: 'no-vault' });
  });

  it('uses only the proposed policies with replace:true', async () => {
    const body = await simulated(org, { input: unverifiedWrite, policies: [vault], replace: true });
    expect(body).toMatchObject({ decision: 'allow', policy: 'default', rule: null });
    expect(body.trace).toEqual([{ policy: 'vault', applicable: false, rules: [] }]);
  });

  it('changes nothing stored', async () => {
    await simulated(org, { input: unverifiedWrite, policies: [vault], replace: true });
    const list = await admin<{ version: number; policies: Array<{ name: string }> }>(org, 'GET', '/admin/policies');
    expect(list.body.version).toBe(3);
    expect(list.body.policies.map((policy) => policy.name)).toEqual(['untrusted-writes', 'trusted-deletes', 'write-checks']);
    expect(await simulated(org, { input: unverifiedWrite })).toMatchObject({ decision: 'deny', policy: 'untrusted-writes', policyVersion: 3 });
  });

  it('combines deny-overrides: a later deny beats an earlier allow', async () => {
    const policies = [
      { name: 'grant', rules: [{ name: 'verified-may', condition: 'agent.trust_tier >= verified', action: 'allow', reason: 'Verified agents may' }] },
      { name: 'block', rules: [{ name: 'no-secrets', condition: 'action starts_with "write:secrets"', action: 'deny', reason: 'Secrets are off-limits' }] },
    ];
    const denied = await simulated(org, { input: { agent: { trust_tier: 'verified' }, action: 'write:secrets/1' }, policies, replace: true });
    expect(denied).toMatchObject({ decision: 'deny', policy: 'block', rule: 'no-secrets', reason: 'Secrets are off-limits' });
    expect(denied.trace).toEqual([
      { policy: 'grant', applicable: true, rules: [{ rule: 'verified-may', action: 'allow', result: true }] },
      { policy: 'block', applicable: true, rules: [{ rule: 'no-secrets', action: 'deny', result: true }] },
    ]);
    const allowed = await simulated(org, { input: { agent: { trust_tier: 'verified' }, action: 'write:notes/1' }, policies, replace: true });
    expect(allowed).toMatchObject({ decision: 'allow', policy: 'grant', rule: 'verified-may', reason: 'Verified agents may' });
  });

  it('denies through a default-deny policy when none of its allow rules fires', async () => {
    const policies = doc(
      'policies:',
      '  - name: admin-area',
      '    match: { action: "*:admin*" }',
      '    default: deny',
      '    rules:',
      '      - name: privileged-only',
      '        condition: agent.trust_tier >= privileged',
      '        action: allow',
      '        reason: Privileged agents manage the admin area',
    );
    const denied = await simulated(org, { input: { agent: { trust_tier: 'trusted' }, action: 'read:admin/users' }, policies, replace: true });
    expect(denied).toMatchObject({ decision: 'deny', policy: 'admin-area', rule: 'admin-area#default' });
    expect(denied.reason).toContain('admin-area');
    expect(denied.trace).toEqual([{ policy: 'admin-area', applicable: true, rules: [{ rule: 'privileged-only', action: 'allow', result: false }] }]);
    const allowed = await simulated(org, { input: { agent: { trust_tier: 'privileged' }, action: 'read:admin/users' }, policies, replace: true });
    expect(allowed).toMatchObject({ decision: 'allow', policy: 'admin-area', rule: 'privileged-only' });
    const elsewhere = await simulated(org, { input: { agent: { trust_tier: 'unverified' }, action: 'read:home' }, policies, replace: true });
    expect(elsewhere).toMatchObject({ decision: 'allow', policy: 'default' });
  });

  it('peeks at proposed rate limits without counting', async () => {
    const policies = [{ name: 'one-per-minute', rules: [{ condition: 'rate_limit(per_agent, 1, 1m)', action: 'deny', reason: 'Slow down' }] }];
    const input = { agent: { id: 'agent_simulated_only', trust_tier: 'verified' }, action: 'read:x' };
    for (let i = 0; i < 3; i++) {
      const body = await simulated(org, { input, policies });
      expect(body).toMatchObject({ decision: 'allow', policy: 'one-per-minute', rule: null });
      expect(body.trace.at(-1)?.rules).toEqual([{ rule: 'one-per-minute#0', action: 'deny', result: false, rateLimit: expect.objectContaining({ limit: '1/1m per_agent' }) }]);
    }
  });

  it('answers 400 invalid_policy for invalid proposed policies, with positions', async () => {
    const source = doc('name: broken', 'rules:', '  - condition: agent.tier == "x"', '    action: deny', '    reason: r');
    const response = await admin<ErrorBody>(org, 'POST', '/admin/policies/simulate', { input: unverifiedWrite, policies: source });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_policy');
    expect(response.body.errors).toEqual([expect.objectContaining({ policy: 'broken', rule: 'broken#0', line: 3, column: 22, message: expect.stringContaining("unknown agent field 'tier'") })]);
  });
});

describe('POST /admin/policies/backtest', () => {
  let org: TestOrganization;
  let agent: CreatedAgent;
  let from: string;
  let to: string;
  /** The proxied requests, oldest first, as the audit trail recorded them. */
  let recorded: AuditEntry[];

  const proposed = doc(
    'policies:',
    '  - name: reports-readonly',
    '    match: { action: "write:reports*" }',
    '    rules:',
    '      - condition: agent.trust_tier < verified',
    '        action: deny',
    '        reason: Unverified agents cannot write reports',
    '  - name: big-orders',
    '    match: { action: "write:orders*" }',
    '    rules:',
    '      - name: amount-cap',
    '        condition: args.amount > 1000',
    '        action: deny',
    '        reason: Orders over 1000 need approval',
    '  - name: no-deletes',
    '    match: { action: "delete:*" }',
    '    rules:',
    '      - condition: "true"',
    '        action: deny',
    '        reason: Nothing is deleted',
  );

  beforeAll(async () => {
    org = await createOrganization(gateway, 'enterprise', 'Backtest org');
    await storePolicies(org, [
      doc('name: reports-readonly', 'match: { action: "write:reports*" }', 'rules:', '  - name: no-report-writes', '    condition: "true"', '    action: deny', '    reason: Reports are read-only'),
    ]);
    agent = await createAgent(org, 'backtest-agent', 'verified');
    from = new Date(Date.now() - 1000).toISOString();
    const traffic: Array<[string, string, number]> = [
      ['GET', '/proxy/orders/1', 200],
      ['GET', '/proxy/orders/2?limit=5', 200],
      ['POST', '/proxy/orders?amount=50', 200],
      ['POST', '/proxy/orders?amount=5000', 200],
      ['POST', '/proxy/reports', 403],
      ['DELETE', '/proxy/orders/1', 200],
    ];
    const sentBefore = upstreamRequests.length;
    for (const [method, path, status] of traffic) {
      const response = await call(gateway.url, method, path, { bearer: agent.token, body: method === 'POST' ? { note: 'x' } : undefined });
      expect(response.status).toBe(status);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(upstreamRequests.length - sentBefore).toBe(5);
    recorded = (await proxyEntries(org, traffic.length)).reverse();
    to = new Date(Date.now() + 1000).toISOString();
    expect(recorded.map((entry) => [entry.action, entry.decision])).toEqual([
      ['read:orders/1', 'allow'],
      ['read:orders/2', 'allow'],
      ['write:orders', 'allow'],
      ['write:orders', 'allow'],
      ['write:reports', 'deny'],
      ['delete:orders/1', 'allow'],
    ]);
  });

  function backtest(body: Record<string, unknown>): Promise<TestResponse<BacktestBody>> {
    return admin<BacktestBody>(org, 'POST', '/admin/policies/backtest', body);
  }

  it('replays the recorded traffic through proposed policies and reports every flip', async () => {
    const response = await backtest({ policies: proposed, from, to });
    expect(response.status).toBe(200);
    const report = response.body;
    expect(report).toMatchObject({ from, to, examined: 6, skipped: 0, unchanged: 3, allowToDeny: 2, denyToAllow: 1, truncated: false });
    expect([...report.byPolicy].sort((a, b) => a.policy.localeCompare(b.policy))).toEqual([
      { policy: 'big-orders', allowToDeny: 1, denyToAllow: 0 },
      { policy: 'no-deletes', allowToDeny: 1, denyToAllow: 0 },
      { policy: 'reports-readonly', allowToDeny: 0, denyToAllow: 1 },
    ]);
    const [bigOrder, report5, deletion] = [recorded[3], recorded[4], recorded[5]];
    expect(report.flips).toEqual([
      {
        id: bigOrder.id,
        timestamp: bigOrder.timestamp,
        agentId: agent.id,
        action: 'write:orders',
        before: before(bigOrder),
        after: { decision: 'deny', policy: 'big-orders', rule: 'amount-cap', reason: 'Orders over 1000 need approval' },
      },
      {
        id: report5.id,
        timestamp: report5.timestamp,
        agentId: agent.id,
        action: 'write:reports',
        before: { decision: 'deny', policy: 'reports-readonly', rule: 'no-report-writes', reason: 'Reports are read-only' },
        after: expect.objectContaining({ decision: 'allow', policy: 'reports-readonly', rule: null }),
      },
      {
        id: deletion.id,
        timestamp: deletion.timestamp,
        agentId: agent.id,
        action: 'delete:orders/1',
        before: before(deletion),
        after: { decision: 'deny', policy: 'no-deletes', rule: 'no-deletes#0', reason: 'Nothing is deleted' },
      },
    ]);
    expect(bigOrder.policyName).toBe('default');
  });

  it('reports no flips for the stored policies themselves', async () => {
    const stored = await admin<{ source: string }>(org, 'GET', '/admin/policies/reports-readonly');
    const report = (await backtest({ policies: stored.body.source, from, to })).body;
    expect(report).toMatchObject({ examined: 6, unchanged: 6, allowToDeny: 0, denyToAllow: 0, byPolicy: [], flips: [] });
  });

  it('replays only the proposed policies with replace:true', async () => {
    const onlyBigOrders = { name: 'big-orders', match: { action: 'write:orders*' }, rules: [{ condition: 'args.amount > 1000', action: 'deny', reason: 'Too big' }] };
    const report = (await backtest({ policies: [onlyBigOrders], replace: true, from, to })).body;
    expect(report).toMatchObject({ examined: 6, allowToDeny: 1, denyToAllow: 1 });
    expect(report.flips.map((flip) => [flip.id, flip.before.decision, flip.after.decision, flip.after.policy])).toEqual([
      [recorded[3].id, 'allow', 'deny', 'big-orders'],
      [recorded[4].id, 'deny', 'allow', 'default'],
    ]);
  });

  it('reads only decisions in [from, to)', async () => {
    const report = (await backtest({ policies: proposed, from: recorded[3].timestamp, to: recorded[5].timestamp })).body;
    expect(report).toMatchObject({ examined: 2, allowToDeny: 1, denyToAllow: 1 });
    expect(report.flips.map((flip) => flip.id)).toEqual([recorded[3].id, recorded[4].id]);
  });

  it('stops at `limit` and says so', async () => {
    const report = (await backtest({ policies: proposed, from, to, limit: 4 })).body;
    expect(report).toMatchObject({ examined: 4, allowToDeny: 1, denyToAllow: 0, truncated: true });
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    ['to before from', { policies: proposed, from: '2026-01-02T00:00:00.000Z', to: '2026-01-01T00:00:00.000Z' }, 'invalid_request', 'to'],
    ['missing from', { policies: proposed }, 'invalid_request', 'from'],
    ['a from of ISO week form, which Date cannot read', { policies: proposed, from: '2026-W01' }, 'invalid_request', 'from must'],
    ['a to in the basic format', { policies: proposed, from: '2026-01-01T00:00:00.000Z', to: '20260102' }, 'invalid_request', 'to must'],
    ['missing policies', { from: '2026-01-01T00:00:00.000Z' }, 'invalid_request', 'policies'],
    ['invalid proposed policies', { policies: doc('name: b', 'rules:', '  - condition: foo == 1', '    action: deny', '    reason: r'), from: '2026-01-01T00:00:00.000Z' }, 'invalid_policy', 'foo'],
  ])('answers 400 for %s', async (_what, body, error, mentioned) => {
    const response = await admin<ErrorBody>(org, 'POST', '/admin/policies/backtest', body);
    expect(response.status).toBe(400);
    expect(response.body.error).toBe(error);
    expect(response.body.message).toContain(mentioned);
  });
});

describe('POST /admin/policies/backtest with a proposed rate limit', () => {
  it('replays rate_limit on the recorded timestamps', async () => {
    const org = await createOrganization(gateway, 'enterprise', 'Backtest rate org');
    const agent = await createAgent(org, 'rate-agent', 'verified');
    const from = new Date(Date.now() - 1000).toISOString();
    for (let i = 1; i <= 5; i++) {
      const response = await call(gateway.url, 'GET', `/proxy/items/${i}`, { bearer: agent.token });
      expect(response.status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const recorded = (await proxyEntries(org, 5)).reverse();
    const policies = [{ name: 'read-rate', match: { action: 'read:*' }, rules: [{ name: 'reads-per-minute', condition: 'rate_limit(per_agent, 3, 1m)', action: 'deny', reason: 'Too many reads' }] }];

    for (let run = 0; run < 2; run++) {
      const response = await admin<BacktestBody>(org, 'POST', '/admin/policies/backtest', { policies, from });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ examined: 5, unchanged: 3, allowToDeny: 2, denyToAllow: 0, byPolicy: [{ policy: 'read-rate', allowToDeny: 2, denyToAllow: 0 }] });
      expect(response.body.flips.map((flip) => flip.id)).toEqual([recorded[3].id, recorded[4].id]);
      expect(response.body.flips[0].after).toEqual({
        decision: 'deny',
        policy: 'read-rate',
        rule: 'reads-per-minute',
        reason: 'Too many reads',
        rateLimit: { limit: '3/1m per_agent', retryAfterSeconds: expect.any(Number) },
      });
    }

    const partial = await admin<BacktestBody>(org, 'POST', '/admin/policies/backtest', { policies, from, to: recorded[4].timestamp });
    expect(partial.body).toMatchObject({ examined: 4, allowToDeny: 1 });
    expect(partial.body.flips.map((flip) => flip.id)).toEqual([recorded[3].id]);

    const live = await call(gateway.url, 'GET', '/proxy/items/6', { bearer: agent.token });
    expect(live.status).toBe(200);
  });
});
