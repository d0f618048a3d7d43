import { call } from './support/http-client';
import { auditEntries, createAgent, proxy, TestAgent } from './support/org-fixtures';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * Backtests of session-reading policies (docs/policies.md "Seen"): every recorded decision
 * carries the session facts it read before it was decided, so a replay decides on what the
 * live call read, and the proposed policies' own label rules are replayed on top.
 */

const LIVE = `name: exfiltration
rules:
  - name: reads-customers
    condition: action starts_with "read:customers/"
    action: label
    labels: [private_data]
    reason: Customer records were read
  - name: fetches-web
    condition: action starts_with "read:web/"
    action: label
    labels: [untrusted_content]
    reason: An untrusted web page was fetched
  - name: no-way-out
    condition: action starts_with "write:mail/" and session.labels.has("private_data") and session.labels.has("untrusted_content")
    action: deny
    reason: Private data and untrusted content in one session; nothing leaves by mail
`;

interface Flip {
  action: string;
  before: { decision: string };
  after: { decision: string; policy: string; rule: string | null };
}

interface BacktestBody {
  examined: number;
  skipped: number;
  unchanged: number;
  allowToDeny: number;
  denyToAllow: number;
  flips: Flip[];
}

interface RecordedEntry {
  action: string;
  decision: string;
  input: { session?: { id: string; labels: string[]; agent_labels: string[]; calls: Record<string, number> } } | null;
  details: { session?: { id: string } } | null;
}

let upstream: TestUpstream;
let gateway: TestGateway;
let org: TestOrganization;
let agent: TestAgent;
let from: string;
let to: string;

const session = (id: string) => ({ 'x-service-session': id });

beforeAll(async () => {
  upstream = await startUpstream();
  gateway = await startGateway({ UPSTREAM_URL: upstream.url });
  org = await createOrganization(gateway, 'enterprise', 'Session backtest org');
  agent = await createAgent(gateway, org, { name: 'replayed-mailer' });
  const put = await call(gateway.url, 'PUT', '/admin/policies/exfiltration', { adminToken: org.adminToken, body: LIVE, headers: { 'content-type': 'application/yaml' } });
  expect([200, 201]).toContain(put.status);
  from = new Date(Date.now() - 1000).toISOString();
  // Session a: the three-step attack, its third call denied live. Session b: customers, a weather page, mail, let through live.
  const traffic: Array<[string, string, string, number]> = [
    ['s-a', 'GET', '/customers/42', 200],
    ['s-a', 'GET', '/web/page', 200],
    ['s-a', 'POST', '/mail/send', 403],
    ['s-b', 'GET', '/customers/43', 200],
    ['s-b', 'GET', '/weather/today', 200],
    ['s-b', 'POST', '/mail/send', 200],
  ];
  for (const [id, method, path, status] of traffic) expect((await proxy(gateway, agent.token, method, path, session(id))).status).toBe(status);
  expect((await auditEntries(gateway, org, `agentId=${agent.id}&source=proxy`, traffic.length)).length).toBe(traffic.length);
  to = new Date(Date.now() + 1000).toISOString();
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

async function recorded(): Promise<RecordedEntry[]> {
  const response = await call<{ entries: Array<RecordedEntry & { seq: number }> }>(gateway.url, 'GET', `/admin/audit?limit=100&source=proxy&agentId=${agent.id}`, { adminToken: org.adminToken });
  expect(response.status).toBe(200);
  return response.body.entries.sort((a, b) => a.seq - b.seq);
}

async function backtest(policies: string): Promise<BacktestBody> {
  const response = await call<BacktestBody>(gateway.url, 'POST', '/admin/policies/backtest', { adminToken: org.adminToken, body: { policies, from, to } });
  expect(response.status).toBe(200);
  return response.body;
}

it('records in each decision input the session facts as the call read them, before its own labels and action', async () => {
  const entries = (await recorded()).filter((entry) => entry.details?.session?.id === 's-a');
  expect(entries.map((entry) => [entry.action, entry.decision, entry.input?.session])).toEqual([
    ['read:customers/42', 'allow', { id: 's-a', labels: [], agent_labels: [], calls: {} }],
    ['read:web/page', 'allow', { id: 's-a', labels: ['private_data'], agent_labels: [], calls: { 'read:customers/42': 1 } }],
    ['write:mail/send', 'deny', { id: 's-a', labels: ['private_data', 'untrusted_content'], agent_labels: [], calls: { 'read:customers/42': 1, 'read:web/page': 1 } }],
  ]);
});

it('replays the policies in force as live traffic decided: the third call of the attack stays denied', async () => {
  const report = await backtest(LIVE);
  expect(report).toMatchObject({ examined: 6, skipped: 0, unchanged: 6, allowToDeny: 0, denyToAllow: 0, flips: [] });
});

it('backtests a stricter rule on the labels the live calls carried: only the mail of the session that read customers flips', async () => {
  const stricter = LIVE.replace('and session.labels.has("private_data") and session.labels.has("untrusted_content")', 'and session.labels.has("private_data") and session.count("read:*") >= 2');
  const report = await backtest(stricter);
  // Session a's mail is denied either way; session b read customers and a weather page, so its mail now flips.
  expect(report).toMatchObject({ examined: 6, unchanged: 5, allowToDeny: 1, denyToAllow: 0 });
  expect(report.flips).toEqual([expect.objectContaining({ action: 'write:mail/send', before: expect.objectContaining({ decision: 'allow' }), after: expect.objectContaining({ decision: 'deny', policy: 'exfiltration', rule: 'no-way-out' }) })]);
});

it('replays a label rule the proposed policies add: a weather page labelled untrusted denies session b its mail', async () => {
  const labelling = LIVE.replace('condition: action starts_with "read:web/"', 'condition: action starts_with "read:web/" or action starts_with "read:weather/"');
  const report = await backtest(labelling);
  expect(report).toMatchObject({ examined: 6, unchanged: 5, allowToDeny: 1, denyToAllow: 0 });
  expect(report.flips).toEqual([expect.objectContaining({ action: 'write:mail/send', after: expect.objectContaining({ decision: 'deny', rule: 'no-way-out' }) })]);
});

it('lets a relaxed policy allow the third call: the flip is deny to allow, on that call alone', async () => {
  const relaxed = LIVE.replace('action starts_with "write:mail/" and', 'action starts_with "write:mail/external/" and');
  const report = await backtest(relaxed);
  expect(report).toMatchObject({ examined: 6, unchanged: 5, allowToDeny: 0, denyToAllow: 1 });
  expect(report.flips.map((flip) => [flip.action, flip.before.decision, flip.after.decision])).toEqual([['write:mail/send', 'deny', 'allow']]);
});

describe('POST /admin/policies/simulate with session facts', () => {
  interface Simulated {
    decision: string;
    policy: string;
    rule: string | null;
  }
  const simulate = (input: Record<string, unknown>) => call<Simulated & { message?: string }>(gateway.url, 'POST', '/admin/policies/simulate', { adminToken: org.adminToken, body: { input } });

  it('decides on the session facts the input gives, as policy test files give them', async () => {
    const mail = { agentId: agent.id, action: 'write:mail/send' };
    expect((await simulate(mail)).body).toMatchObject({ decision: 'allow' });
    const tainted = await simulate({ ...mail, session: { id: 'sim', labels: ['private_data', 'untrusted_content'], calls: { 'read:customers/1': 1 } } });
    expect(tainted.status).toBe(200);
    expect(tainted.body).toMatchObject({ decision: 'deny', policy: 'exfiltration', rule: 'no-way-out' });
  });

  it('decides on what a live session of the agent holds with sessionId, and remembers nothing', async () => {
    expect((await simulate({ agentId: agent.id, sessionId: 's-a', action: 'write:mail/send' })).body).toMatchObject({ decision: 'deny', rule: 'no-way-out' });
    // Session b holds private_data only; a simulated web page adds no label to it.
    expect((await simulate({ agentId: agent.id, sessionId: 's-b', action: 'read:web/page' })).body).toMatchObject({ decision: 'allow' });
    expect((await simulate({ agentId: agent.id, sessionId: 's-b', action: 'write:mail/send' })).body).toMatchObject({ decision: 'allow' });
    const timeline = await call<{ labels: string[] }>(gateway.url, 'GET', `/admin/sessions/timeline?agentId=${agent.id}&sessionId=s-b`, { adminToken: org.adminToken });
    expect(timeline.body.labels).toEqual(['private_data']);
  });

  it('refuses session facts that cannot be, naming the field', async () => {
    const bad = async (input: Record<string, unknown>, message: RegExp) => {
      const response = await simulate({ action: 'write:mail/send', ...input });
      expect(response.status).toBe(400);
      expect(response.body.message).toMatch(message);
    };
    await bad({ session: { calls: { 'read:x': 'twice' } } }, /input\.session\.calls\["read:x"\] must be a whole number/);
    await bad({ session: { calls: { 'read:x': -1 } } }, /input\.session\.calls\["read:x"\] must be a whole number/);
    await bad({ sessionId: 's-a' }, /input\.sessionId needs input\.agentId/);
    await bad({ agentId: agent.id, sessionId: 'a b' }, /sessionId must be characters of A-Z a-z 0-9/);
    await bad({ agentId: agent.id, sessionId: 's-a', session: { labels: [] } }, /not both/);
    await bad({ session: { labels: ['x'.repeat(65)] } }, /labels/);
  });
});
