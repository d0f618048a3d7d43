import { DataSource } from 'typeorm';
import { call, TestResponse } from './support/http-client';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/** The audit trail of proxied traffic and admin changes (docs/architecture.md "The audit pipeline"; GET /admin/audit in the OpenAPI document). */

// jest-circus reads testTimeout only from the top-level config, not from the e2e project's entry.

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

interface Agent {
  id: string;
  name: string;
  token: string;
}

interface AuditEntry {
  id: string;
  timestamp: string;
  seq: number;
  source: string;
  kind: string;
  traceId: string | null;
  agentId: string | null;
  agentName: string | null;
  trustTier: string | null;
  action: string;
  method: string | null;
  path: string | null;
  decision: string;
  enforced: boolean;
  policyName: string | null;
  rule: string | null;
  reason: string | null;
  latencyMs: number | null;
  decisionLatencyMs: number | null;
  status: number | null;
  upstreamStatus: number | null;
  input: { args?: Record<string, unknown>; context?: Record<string, unknown> } | null;
  details: Record<string, unknown> | null;
}

interface AuditPage {
  entries: AuditEntry[];
  nextCursor: string | null;
}

interface Verification {
  ok: boolean;
  checked: number;
  firstSeq: number | null;
  lastSeq: number | null;
  brokenAt: { seq: number; id: string | null; problem: string; message: string } | null;
}

let upstream: TestUpstream;
let gateway: TestGateway;
let traceSeq = 0;

beforeAll(async () => {
  upstream = await startUpstream();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

function traceId(): string {
  return `audit-test-${process.pid}-${++traceSeq}`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function createAgent(org: TestOrganization, body: Record<string, unknown> = {}): Promise<Agent> {
  const response = await call<Agent>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'audited', ...body } });
  expect(response.status).toBe(201);
  return response.body;
}

async function putPolicy(org: TestOrganization, yaml: string): Promise<TestResponse> {
  const name = /^name: (\S+)/.exec(yaml)![1];
  const response = await call(gateway.url, 'PUT', `/admin/policies/${name}`, { adminToken: org.adminToken, body: yaml, headers: { 'content-type': 'application/yaml' } });
  expect([200, 201]).toContain(response.status);
  return response;
}

const NO_SECRETS = `name: no-secrets
match: { action: "read:secret*" }
rules:
  - name: secret-rule
    condition: true
    action: deny
    reason: Secrets are off limits
`;

// Reads a body field, so JSON bodies on write:vault* are parsed into args.
const VAULT_LIMIT = `name: vault-limit
match: { action: "write:vault*" }
rules:
  - name: huge-amounts
    condition: args.amount > 1000000
    action: deny
    reason: Too much
`;

function proxy(agent: Agent, method: string, path: string, options: { headers?: Record<string, string>; body?: unknown; on?: TestGateway } = {}) {
  return call((options.on ?? gateway).url, method, `/proxy${path}`, { bearer: agent.token, headers: options.headers, body: options.body });
}

function audit<T = AuditPage>(org: TestOrganization, path: string): Promise<TestResponse<T>> {
  return call<T>(gateway.url, 'GET', path, { adminToken: org.adminToken });
}

/** Polls GET /admin/audit until `count` entries match, then checks no more arrive. */
async function entriesOf(org: TestOrganization, query: string, count: number): Promise<AuditEntry[]> {
  const read = async () => {
    const response = await audit(org, `/admin/audit?limit=1000&${query}`);
    expect(response.status).toBe(200);
    return response.body.entries;
  };
  const deadline = Date.now() + 10_000;
  while ((await read()).length < count && Date.now() < deadline) await sleep(25);
  await sleep(100);
  const entries = await read();
  expect(entries).toHaveLength(count);
  return entries;
}

/** Sends `allowed` and `denied` requests for an agent and returns their trace ids. */
async function traffic(agent: Agent, allowed: number, denied: number): Promise<string[]> {
  const traces: string[] = [];
  for (let i = 0; i < allowed; i++) {
    const trace = traceId();
    expect((await proxy(agent, 'GET', `/items/${i}`, { headers: { 'x-trace-id': trace } })).status).toBe(200);
    traces.push(trace);
  }
  for (let i = 0; i < denied; i++) {
    const trace = traceId();
    expect((await proxy(agent, 'GET', `/secret/${i}`, { headers: { 'x-trace-id': trace } })).status).toBe(403);
    traces.push(trace);
  }
  return traces;
}

describe('decision entries', () => {
  it('records exactly one entry per proxied request, with every field', async () => {
    const org = await createOrganization(gateway, 'enterprise', 'Audit fields org');
    await putPolicy(org, NO_SECRETS);
    const agent = await createAgent(org, { name: 'fields-bot', trustTier: 'trusted' });
    const requests: Array<[method: string, path: string, status: number, expected: Partial<AuditEntry>]> = [
      ['GET', '/items/1?x=1&y=2', 200, { action: 'read:items/1', path: '/items/1', decision: 'allow', policyName: 'default', rule: null, upstreamStatus: 200 }],
      ['POST', '/status/201?z=9', 201, { action: 'write:status/201', path: '/status/201', decision: 'allow', policyName: 'default', rule: null, upstreamStatus: 201 }],
      ['DELETE', '/status/404', 404, { action: 'delete:status/404', path: '/status/404', decision: 'allow', upstreamStatus: 404 }],
      ['GET', '/secret/a?q=1', 403, { action: 'read:secret/a', path: '/secret/a', decision: 'deny', policyName: 'no-secrets', rule: 'secret-rule', reason: 'Secrets are off limits', upstreamStatus: null }],
      ['HEAD', '/secret/b', 403, { action: 'read:secret/b', path: '/secret/b', decision: 'deny', policyName: 'no-secrets', rule: 'secret-rule', upstreamStatus: null }],
    ];
    const traces: string[] = [];
    for (const [method, path, status] of requests) {
      const trace = traceId();
      traces.push(trace);
      expect((await proxy(agent, method, path, { headers: { 'x-trace-id': trace } })).status).toBe(status);
    }
    const entries = await entriesOf(org, 'source=proxy', requests.length);
    requests.forEach(([method, , status, expected], index) => {
      const entry = entries.find((candidate) => candidate.traceId === traces[index]);
      expect(entry).toMatchObject({
        ...expected,
        method,
        status,
        source: 'proxy',
        kind: 'decision',
        agentId: agent.id,
        agentName: 'fields-bot',
        trustTier: 'trusted',
        enforced: true,
        traceId: traces[index],
      });
      expect(entry!.timestamp).toMatch(ISO_MS);
      expect(entry!.latencyMs).toEqual(expect.any(Number));
      expect(entry!.decisionLatencyMs).toEqual(expect.any(Number));
      expect(entry!.latencyMs).toBeGreaterThanOrEqual(0);
      expect(entry!.decisionLatencyMs).toBeGreaterThanOrEqual(0);
      expect(entry!.latencyMs).toBeGreaterThanOrEqual(entry!.decisionLatencyMs!);
    });
  });

  it('counts N allowed and M denied requests as exactly N + M entries', async () => {
    const org = await createOrganization(gateway, 'enterprise', 'Audit count org');
    await putPolicy(org, NO_SECRETS);
    const [first, second] = [await createAgent(org), await createAgent(org)];
    const traces = [...(await traffic(first, 4, 3)), ...(await traffic(second, 2, 1))];
    const entries = await entriesOf(org, 'source=proxy', 10);
    expect(entries.map((entry) => entry.traceId).sort()).toEqual([...traces].sort());
    expect(entries.filter((entry) => entry.decision === 'allow')).toHaveLength(6);
    expect(entries.filter((entry) => entry.decision === 'deny')).toHaveLength(4);
    expect(entries.filter((entry) => entry.agentId === first.id)).toHaveLength(7);
  });
});

describe('GET /admin/audit', () => {
  let org: TestOrganization;
  let first: Agent;
  let second: Agent;
  let boundary: string;

  // 30 + 12 requests before a time boundary, 15 + 3 after: 60 decisions, plus admin entries.
  beforeAll(async () => {
    org = await createOrganization(gateway, 'enterprise', 'Audit query org');
    await putPolicy(org, NO_SECRETS);
    first = await createAgent(org, { name: 'first' });
    second = await createAgent(org, { name: 'second' });
    await traffic(first, 20, 10);
    await traffic(second, 10, 2);
    await entriesOf(org, 'source=proxy', 42);
    await sleep(20);
    boundary = new Date().toISOString();
    await sleep(20);
    await traffic(first, 10, 2);
    await traffic(second, 5, 1);
    await entriesOf(org, 'source=proxy', 60);
  });

  it('answers 50 entries by default, newest first', async () => {
    const response = await audit(org, '/admin/audit');
    expect(response.status).toBe(200);
    expect(response.body.entries).toHaveLength(50);
    expect(response.body.nextCursor).toEqual(expect.any(String));
    const times = response.body.entries.map((entry) => Date.parse(entry.timestamp));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it.each([
    ['limit=1001', 'limit'],
    ['limit=0', 'limit'],
    ['limit=ten', 'limit'],
    ['decision=maybe', 'decision'],
    ['from=yesterday', 'from'],
    ['to=2026-13-45T00:00:00Z', 'to'],
    // ISO 8601 forms that Date cannot read: a week, an ordinal day, the basic format, an hour alone
    ['from=2026-W48', 'from must'],
    ['to=2026-330', 'to must'],
    ['from=20261125', 'from must'],
    ['to=2026-11-25T06', 'to must'],
    ['cursor=not%20a%20cursor', 'cursor'],
  ])('answers 400 naming the field for %s', async (query, field) => {
    const response = await audit(org, `/admin/audit?${query}`);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: expect.any(String), message: expect.stringContaining(field) });
  });

  it.each(['from=2026-W48', 'to=20261125'])('answers 400 naming the field for verify?%s', async (query) => {
    const response = await audit(org, `/admin/audit/verify?${query}`);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: 'invalid_request', message: expect.stringContaining(`${query.split('=')[0]} must`) });
  });

  it.each(['/admin/audit', '/admin/audit/verify'])('answers 400 to %s with from later than to, and takes from equal to to', async (path) => {
    // Answered 200 with nothing found, a reversed range read as an empty (or verified) trail.
    const reversed = await audit(org, `${path}?from=2026-11-25T10:00:00Z&to=2026-11-25T09:00:00Z`);
    expect(reversed.status).toBe(400);
    expect(reversed.body).toMatchObject({ error: 'invalid_request', message: 'from (2026-11-25T10:00:00Z) is later than to (2026-11-25T09:00:00Z)' });
    expect((await audit(org, `${path}?from=2026-11-25T10:00:00Z&to=2026-11-25T10:00:00Z`)).status).toBe(200);
  });

  it('accepts limit=1000', async () => {
    const response = await audit(org, '/admin/audit?limit=1000');
    expect(response.status).toBe(200);
    expect(response.body.entries.length).toBeGreaterThanOrEqual(60);
    expect(response.body.nextCursor).toBeNull();
  });

  it('filters by decision, agent and action prefix', async () => {
    const denied = (await audit(org, '/admin/audit?limit=1000&decision=deny')).body.entries;
    expect(denied).toHaveLength(15);
    expect(denied.every((entry) => entry.decision === 'deny' && entry.action.startsWith('read:secret/'))).toBe(true);

    const allowed = (await audit(org, '/admin/audit?limit=1000&decision=allow&source=proxy')).body.entries;
    expect(allowed).toHaveLength(45);

    const ofSecond = (await audit(org, `/admin/audit?limit=1000&source=proxy&agentId=${second.id}`)).body.entries;
    expect(ofSecond).toHaveLength(18);
    expect(ofSecond.every((entry) => entry.agentId === second.id && entry.agentName === 'second')).toBe(true);

    const secrets = (await audit(org, `/admin/audit?limit=1000&action=${encodeURIComponent('read:secret')}`)).body.entries;
    expect(secrets).toHaveLength(15);
    const items = (await audit(org, `/admin/audit?limit=1000&action=${encodeURIComponent('read:items/1')}&agentId=${first.id}`)).body.entries;
    // items/1 and items/10 … items/19 of the first agent's two batches
    expect(items.map((entry) => entry.path).sort()).toEqual(['/items/1', '/items/1', ...Array.from({ length: 10 }, (_, i) => `/items/1${i}`)].sort());
    expect((await audit(org, '/admin/audit?limit=1000&action=admin%3A')).body.entries.every((entry) => entry.source === 'admin')).toBe(true);
  });

  it('filters by time: from is inclusive, to is exclusive, both ISO 8601', async () => {
    const after = (await audit(org, `/admin/audit?limit=1000&source=proxy&from=${encodeURIComponent(boundary)}`)).body.entries;
    expect(after).toHaveLength(18);
    const before = (await audit(org, `/admin/audit?limit=1000&source=proxy&to=${encodeURIComponent(boundary)}`)).body.entries;
    expect(before).toHaveLength(42);
    expect(after.every((entry) => entry.timestamp >= boundary)).toBe(true);
    expect(before.every((entry) => entry.timestamp < boundary)).toBe(true);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await audit(org, `/admin/audit?from=${encodeURIComponent(future)}`)).body).toEqual({ entries: [], nextCursor: null });
  });

  it('pages with cursor through every entry exactly once', async () => {
    const all = (await audit(org, '/admin/audit?limit=1000')).body.entries.map((entry) => entry.id);
    const paged: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const response: TestResponse<AuditPage> = await audit(org, `/admin/audit?limit=7${cursor === null ? '' : `&cursor=${cursor}`}`);
      expect(response.status).toBe(200);
      expect(response.body.entries.length).toBeLessThanOrEqual(7);
      paged.push(...response.body.entries.map((entry) => entry.id));
      cursor = response.body.nextCursor;
      pages++;
    } while (cursor !== null && pages < 100);
    expect(cursor).toBeNull();
    expect(paged).toEqual(all);
    expect(new Set(paged).size).toBe(paged.length);
    expect(pages).toBe(Math.ceil(all.length / 7));
  });

  it('reports stats for 24h and 7d, decisions only', async () => {
    for (const [query, period] of [
      ['', '24h'],
      ['?period=24h', '24h'],
      ['?period=7d', '7d'],
      ['?period=30d', '30d'],
    ]) {
      const response = await audit<Record<string, unknown>>(org, `/admin/audit/stats${query}`);
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ total: 60, allowed: 45, denied: 15, period });
    }
    const bad = await audit<Record<string, unknown>>(org, '/admin/audit/stats?period=1y');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: expect.any(String), message: expect.stringContaining('period') });
  });

  it('keeps each organization to its own trail', async () => {
    const other = await createOrganization(gateway, 'enterprise', 'Audit other org');
    const page = (await audit(other, '/admin/audit?limit=1000')).body;
    expect(page).toEqual({ entries: [], nextCursor: null });
    expect((await audit(other, `/admin/audit?agentId=${first.id}`)).body.entries).toEqual([]);
    expect((await audit<Record<string, unknown>>(other, '/admin/audit/stats')).body).toEqual({ total: 0, allowed: 0, denied: 0, period: '24h' });
    expect((await audit<Verification>(other, '/admin/audit/verify')).body).toMatchObject({ ok: true, checked: 0 });
  });
});

describe('admin events', () => {
  it('records agent and policy changes in the same trail, with previous and new values', async () => {
    const org = await createOrganization(gateway, 'enterprise', 'Audit admin org');
    const agent = await createAgent(org, { name: 'changing', trustTier: 'verified' });
    const patch = await call(gateway.url, 'PATCH', `/admin/agents/${agent.id}`, { adminToken: org.adminToken, body: { trustTier: 'trusted', name: 'changed' } });
    expect(patch.status).toBe(200);
    await putPolicy(org, NO_SECRETS);
    await putPolicy(org, NO_SECRETS.replace('Secrets are off limits', 'Still off limits'));
    expect((await call(gateway.url, 'DELETE', '/admin/policies/no-secrets', { adminToken: org.adminToken })).status).toBe(200);
    expect((await call(gateway.url, 'DELETE', `/admin/agents/${agent.id}`, { adminToken: org.adminToken })).status).toBe(200);

    const entries = await entriesOf(org, '', 6);
    expect(entries.every((entry) => entry.source === 'admin' && entry.kind === 'admin')).toBe(true);
    const byAction = (action: string) => entries.filter((entry) => entry.action === action);
    expect(byAction('admin:agent.create')).toHaveLength(1);
    expect(byAction('admin:agent.update')).toEqual([
      expect.objectContaining({
        agentId: agent.id,
        agentName: 'changed',
        details: expect.objectContaining({ previous: { trustTier: 'verified', name: 'changing' }, next: { trustTier: 'trusted', name: 'changed' } }),
      }),
    ]);
    expect(byAction('admin:agent.revoke')).toEqual([expect.objectContaining({ agentId: agent.id, details: expect.objectContaining({ next: { status: 'revoked' } }) })]);
    for (const action of ['admin:policy.create', 'admin:policy.update', 'admin:policy.delete']) {
      expect(byAction(action)).toEqual([expect.objectContaining({ details: expect.objectContaining({ policy: 'no-secrets' }) })]);
    }
    expect((await audit<Verification>(org, '/admin/audit/verify')).body).toMatchObject({ ok: true, checked: 6 });
    expect((await audit<Record<string, unknown>>(org, '/admin/audit/stats')).body).toMatchObject({ total: 0 });
  });
});

describe('redaction', () => {
  it('stores secret-named query parameters and body fields as [redacted], and nowhere else', async () => {
    const org = await createOrganization(gateway, 'enterprise', 'Audit redaction org');
    await putPolicy(org, VAULT_LIMIT);
    const agent = await createAgent(org);
    const trace = traceId();
    const response = await proxy(agent, 'POST', '/vault/store?api_key=s3cret-query-key&password=hunter2-query&keep=visible-query', {
      headers: { 'x-trace-id': trace, 'x-service-context-session-token': 'ctx-s3cret-header' },
      body: { token: 'tok-s3cret-body', amount: 5, nested: { client_secret: 'nested-s3cret-value', label: 'visible-nested' } },
    });
    expect(response.status).toBe(200);
    const [entry] = await entriesOf(org, 'source=proxy', 1);
    expect(entry.path).toBe('/vault/store');
    expect(entry.input?.args).toMatchObject({
      api_key: '[redacted]',
      password: '[redacted]',
      token: '[redacted]',
      keep: 'visible-query',
      amount: 5,
      nested: { client_secret: '[redacted]', label: 'visible-nested' },
    });
    expect(entry.input).toMatchObject({ context: { session_token: '[redacted]' } });
    const text = (await audit(org, '/admin/audit?limit=1000')).text;
    for (const secret of ['s3cret-query-key', 'hunter2-query', 'tok-s3cret-body', 'nested-s3cret-value', 'ctx-s3cret-header', agent.token]) expect(text).not.toContain(secret);
    expect(text).toContain('visible-nested');
  });

  it('redacts URL passwords and secret-named query parameters inside argument values', async () => {
    const org = await createOrganization(gateway, 'enterprise', 'Audit URL redaction org');
    await putPolicy(org, VAULT_LIMIT);
    const agent = await createAgent(org);
    const next = encodeURIComponent('https://app.example/cb?access_token=url-s3cret-query&page=2');
    const response = await proxy(agent, 'POST', `/vault/store?next=${next}`, {
      body: { amount: 5, targets: [{ db: 'postgres://app:url-s3cret-password@db:5432/x' }] },
    });
    expect(response.status).toBe(200);
    const [entry] = await entriesOf(org, 'source=proxy', 1);
    expect(entry.input?.args).toMatchObject({
      next: 'https://app.example/cb?access_token=[redacted]&page=2',
      targets: [{ db: 'postgres://app:[redacted]@db:5432/x' }],
    });
    const text = (await audit(org, '/admin/audit?limit=1000')).text;
    for (const secret of ['url-s3cret-query', 'url-s3cret-password']) expect(text).not.toContain(secret);
  });

  it('AUDIT_REDACT replaces the list of redacted names', async () => {
    const custom = await startGateway({ UPSTREAM_URL: upstream.url, AUDIT_REDACT: 'ssn,PIN' });
    try {
      const org = await createOrganization(gateway, 'enterprise', 'Audit custom redaction org');
      const agent = await createAgent(org);
      const response = await proxy(agent, 'GET', '/people?ssn=123-45-6789&user_pin=4321&password=now-visible', { on: custom });
      expect(response.status).toBe(200);
      const [entry] = await entriesOf(org, 'source=proxy', 1);
      expect(entry.input?.args).toMatchObject({ ssn: '[redacted]', user_pin: '[redacted]', password: 'now-visible' });
      const text = (await audit(org, '/admin/audit?limit=1000')).text;
      expect(text).not.toContain('123-45-6789');
      expect(text).not.toContain('4321');
    } finally {
      await custom.close();
    }
  });
});

describe('tamper evidence', () => {
  /** An organization with 5 chained entries: agent creation then 4 decisions (seq 1 to 5). */
  async function chainedOrg(): Promise<TestOrganization> {
    const org = await createOrganization(gateway, 'enterprise', 'Audit chain org');
    const agent = await createAgent(org);
    await traffic(agent, 4, 0);
    await entriesOf(org, '', 5);
    return org;
  }

  function sql(query: string, params: unknown[]): Promise<unknown> {
    return gateway.app.get(DataSource).query(query, params);
  }

  it('verifies an untouched chain', async () => {
    const org = await chainedOrg();
    const response = await audit<Verification>(org, '/admin/audit/verify');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ok: true, checked: 5, firstSeq: 1, lastSeq: 5, brokenAt: null });
  });

  it.each([
    ['an edited reason', `UPDATE audit_entries SET reason = 'nothing to see' WHERE org_id = $1 AND seq = 3`, { seq: 3, problem: 'hash_mismatch' }],
    ['an edited decision', `UPDATE audit_entries SET decision = 'deny' WHERE org_id = $1 AND seq = 2`, { seq: 2, problem: 'hash_mismatch' }],
    ['an edited input payload', `UPDATE audit_entries SET input = '{"args":{}}' WHERE org_id = $1 AND seq = 4`, { seq: 4, problem: 'hash_mismatch' }],
    ['a deleted middle entry', 'DELETE FROM audit_entries WHERE org_id = $1 AND seq = 3', { seq: 3, problem: 'missing_entries' }],
    // The organization keeps its entries forever (enterprise): nothing may remove its first one.
    ['a deleted oldest entry', 'DELETE FROM audit_entries WHERE org_id = $1 AND seq = 1', { seq: 1, problem: 'missing_entries' }],
    ['a deleted newest entry', 'DELETE FROM audit_entries WHERE org_id = $1 AND seq = 5', { seq: 5, problem: 'head_mismatch' }],
    ['a copied entry', 'INSERT INTO audit_entries SELECT * FROM audit_entries WHERE org_id = $1 AND seq = 3', { seq: 3, problem: 'duplicate_entry' }],
    ['a forged entry under a taken number', `INSERT INTO audit_entries SELECT 'aud_forged', ts, org_id, seq, source, kind, trace_id, agent_id, agent_name, trust_tier, action, method, path, 'deny', enforced, rate_limited, policy_name, rule, reason, decision_latency_ms, latency_ms, status, upstream_status, delegation_chain, input, details, prev_hash, hash FROM audit_entries WHERE org_id = $1 AND seq = 3`, { seq: 3, problem: 'duplicate_entry' }],
    ['a copied newest entry', 'INSERT INTO audit_entries SELECT * FROM audit_entries WHERE org_id = $1 AND seq = 5', { seq: 5, problem: 'duplicate_entry' }],
  ])('reports %s', async (_what, statement, brokenAt) => {
    const org = await chainedOrg();
    await sql(statement, [org.id]);
    const response = await audit<Verification>(org, '/admin/audit/verify');
    expect(response.status).toBe(200);
    expect(response.body.ok).toBe(false);
    expect(response.body.brokenAt).toMatchObject({ ...brokenAt, message: expect.any(String) });
  });

  it('names a forged entry whose sequence number another entry already has', async () => {
    const org = await chainedOrg();
    await sql(`INSERT INTO audit_entries SELECT 'aud_forged', ts, org_id, seq, source, kind, trace_id, agent_id, agent_name, trust_tier, action, method, path, decision, enforced, rate_limited, policy_name, rule, reason, decision_latency_ms, latency_ms, status, upstream_status, delegation_chain, input, details, prev_hash, hash FROM audit_entries WHERE org_id = $1 AND seq = 2`, [org.id]);
    const response = await audit<Verification>(org, '/admin/audit/verify');
    expect(response.body.brokenAt).toMatchObject({ seq: 2, id: 'aud_forged', problem: 'duplicate_entry', message: expect.stringContaining('aud_forged') });
  });

  it('finds a copied entry where verification reads its next page of entries', async () => {
    const org = await chainedOrg();
    const key = await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: { name: 'bulk' } });
    const agentId = (await entriesOf(org, 'source=proxy', 4))[0].agentId;
    // 2000 more decisions (seq 7 to 2006, after the key's creation): verification reads 2000 entries at a time.
    for (let i = 0; i < 20; i++) {
      await Promise.all(Array.from({ length: 100 }, () => call(gateway.url, 'POST', '/v1/check', { headers: { 'x-api-key': key.body.key }, body: { agentId, plugin: 'P', function: 'F' } })));
    }
    const deadline = Date.now() + 10_000;
    const headSeq = async () => Number(((await sql('SELECT seq FROM audit_chain_heads WHERE org_id = $1', [org.id])) as Array<{ seq: string }>)[0].seq);
    while ((await headSeq()) < 2006 && Date.now() < deadline) await sleep(25);
    expect(await headSeq()).toBe(2006);
    await sql('INSERT INTO audit_entries SELECT * FROM audit_entries WHERE org_id = $1 AND seq = 2000', [org.id]);
    const response = await audit<Verification>(org, '/admin/audit/verify');
    expect(response.body).toMatchObject({ ok: false, brokenAt: { seq: 2000, problem: 'duplicate_entry' } });
  });

  it('keeps writing when a chain head row is deleted, and reports the break', async () => {
    const org = await chainedOrg();
    const agent = await createAgent(org);
    await sql('DELETE FROM audit_chain_heads WHERE org_id = $1', [org.id]);
    await traffic(agent, 2, 0);
    // The agent's creation and its two decisions reach the trail after the head row was removed.
    await entriesOf(org, '', 8);
    const response = await audit<Verification>(org, '/admin/audit/verify');
    expect(response.status).toBe(200);
    expect(response.body.ok).toBe(false);
  });
});

describe('shutdown', () => {
  it('writes every queued entry before the gateway closes', async () => {
    const org = await createOrganization(gateway, 'enterprise', 'Audit drain org');
    const agent = await createAgent(org);
    // A flush interval longer than the test: entries stay queued until shutdown drains them.
    const draining = await startGateway({ UPSTREAM_URL: upstream.url, AUDIT_FLUSH_MS: '60000' });
    const traces: string[] = [];
    try {
      for (let i = 0; i < 25; i++) {
        const trace = traceId();
        traces.push(trace);
        expect((await proxy(agent, 'GET', `/drain/${i}`, { on: draining, headers: { 'x-trace-id': trace } })).status).toBe(200);
      }
      expect((await audit(org, '/admin/audit?source=proxy')).body.entries).toEqual([]);
    } finally {
      await draining.close();
    }
    const entries = (await audit(org, '/admin/audit?limit=1000&source=proxy')).body.entries;
    expect(entries.map((entry) => entry.traceId).sort()).toEqual([...traces].sort());
    expect((await audit<Verification>(org, '/admin/audit/verify')).body).toMatchObject({ ok: true, checked: 26 });
  });
});
