import { randomBytes } from 'node:crypto';
import { call } from './support/http-client';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * `POST /v1/audit` with a batch body (docs/pdp.md "Batches"): many events in one request,
 * idempotent per eventId, stamped with when each call happened, refused whole when any event is
 * invalid; `cached: true` puts each application of a cached decision, denials included, on the
 * trail as a decision entry naming the decision it reused. A real gateway on the run's database.
 */

interface AuditEntry {
  id: string;
  timestamp: string;
  source: string;
  kind: string;
  action: string;
  decision: string;
  policyName: string | null;
  rule: string | null;
  reason: string | null;
  details: Record<string, unknown> | null;
}

const POLICIES = `name: batch-files
match: { plugin: FilePlugin, function: "Read*" }
rules:
  - name: system-paths
    condition: args.path starts_with "/etc"
    action: deny
    reason: Access to system files blocked
`;

let gateway: TestGateway;
let org: TestOrganization;
let key: string;
let agentId: string;

async function keyOf(owner: TestOrganization): Promise<string> {
  const response = await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: owner.adminToken, body: { name: 'batch adapter' } });
  expect(response.status).toBe(201);
  return response.body.key;
}

async function agentOf(owner: TestOrganization): Promise<string> {
  const response = await call<{ id: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: owner.adminToken, body: { name: 'batch-agent' } });
  expect(response.status).toBe(201);
  return response.body.id;
}

beforeAll(async () => {
  gateway = await startGateway();
  org = await createOrganization(gateway, 'enterprise', 'Audit batch org');
  const put = await call(gateway.url, 'PUT', '/admin/policies/batch-files', {
    adminToken: org.adminToken,
    body: POLICIES,
    headers: { 'content-type': 'application/yaml' },
  });
  expect([200, 201]).toContain(put.status);
  key = await keyOf(org);
  agentId = await agentOf(org);
});

afterAll(async () => {
  await gateway?.close();
});

function eventId(): string {
  return `evt_${randomBytes(8).toString('hex')}`;
}

function audit(body: unknown, apiKey = key) {
  return call(gateway.url, 'POST', '/v1/audit', {
    body,
    headers: { 'x-api-key': apiKey },
  });
}

async function decide(path: string): Promise<string> {
  const response = await call<{ decisionId: string }>(gateway.url, 'POST', '/v1/check', {
    body: {
      agentId,
      plugin: 'FilePlugin',
      function: 'ReadFile',
      arguments: { path },
    },
    headers: { 'x-api-key': key },
  });
  expect(response.status).toBe(200);
  return response.body.decisionId;
}

/** The trail's entries of one action, once `ready` says they are all written. */
async function entriesOf(action: string, ready: (entries: AuditEntry[]) => boolean, owner = org): Promise<AuditEntry[]> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const response = await call<{ entries: AuditEntry[] }>(gateway.url, 'GET', `/admin/audit?limit=1000&action=${encodeURIComponent(action)}`, { adminToken: owner.adminToken });
    if (ready(response.body.entries)) return response.body.entries;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the audit entries of ${action} never arrived`);
}

/** Waits out the writer's flush, so that an entry that should not be there would be by now. */
function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 200));
}

describe('POST /v1/audit with a batch', () => {
  it('records every event once, each cached denial as a decision entry naming the decision it reused', async () => {
    const denied = await decide('/etc/shadow');
    const allowed = await decide('/tmp/report.txt');
    const read = { agentId, plugin: 'FilePlugin', function: 'ReadFile' };
    const events = [
      {
        ...read,
        eventId: eventId(),
        decision: 'allow',
        durationMs: 4,
        resultSummary: 'read 2 lines',
        decisionId: allowed,
        arguments: { path: '/tmp/report.txt' },
      },
      ...[1, 2, 3].map(() => ({
        ...read,
        eventId: eventId(),
        decision: 'deny',
        durationMs: 0,
        decisionId: denied,
        cached: true,
        arguments: { path: '/etc/shadow' },
      })),
    ];

    const first = await audit({ events });
    const retried = await audit({ events });

    expect([first.status, first.body]).toEqual([202, { accepted: 4, duplicates: 0 }]);
    expect([retried.status, retried.body]).toEqual([202, { accepted: 0, duplicates: 4 }]);
    const isCached = (entry: AuditEntry) => entry.details?.cached === true;
    const entries = await entriesOf('FilePlugin.ReadFile', (found) => found.filter(isCached).length >= 3);
    await settle();
    const after = await entriesOf('FilePlugin.ReadFile', () => true);
    const cached = after.filter(isCached);
    expect(cached).toHaveLength(3);
    expect(after.length).toBe(entries.length);
    for (const entry of cached) {
      expect(entry).toMatchObject({
        kind: 'decision',
        source: 'check',
        decision: 'deny',
        policyName: 'batch-files',
        rule: 'system-paths',
        reason: 'Access to system files blocked',
      });
      expect(entry.details).toMatchObject({ cached: true, decisionId: denied });
    }
    expect(new Set(cached.map((entry) => entry.details?.eventId))).toEqual(new Set(events.slice(1).map((event) => event.eventId)));
    const outcome = after.filter((entry) => entry.kind === 'outcome' && entry.details?.eventId === events[0].eventId);
    expect(outcome).toHaveLength(1);
    expect(outcome[0].details).toMatchObject({
      decisionId: allowed,
      durationMs: 4,
      resultSummary: 'read 2 lines',
    });
  });

  it('counts a retried batch that adds events: the new ones recorded, the others duplicates', async () => {
    const event = (id: string) => ({
      agentId,
      plugin: 'RetryPlugin',
      function: 'Run',
      decision: 'allow',
      durationMs: 1,
      eventId: id,
    });
    const [a, b, c] = [eventId(), eventId(), eventId()];

    expect((await audit({ events: [event(a), event(b)] })).body).toEqual({
      accepted: 2,
      duplicates: 0,
    });
    expect((await audit({ events: [event(b), event(c), event(c)] })).body).toEqual({ accepted: 1, duplicates: 2 });

    await entriesOf('RetryPlugin.Run', (found) => found.length >= 3);
    await settle();
    const entries = await entriesOf('RetryPlugin.Run', () => true);
    expect(entries.map((entry) => entry.details?.eventId).sort()).toEqual([a, b, c].sort());
  });

  it('stamps each entry with when its call happened, not when it was delivered', async () => {
    const occurredAt = new Date(Date.now() - 3 * 3600_000).toISOString();
    const response = await audit({
      events: [
        {
          agentId,
          plugin: 'LatePlugin',
          function: 'Run',
          decision: 'allow',
          durationMs: 1,
          eventId: eventId(),
          occurredAt,
        },
      ],
    });

    expect(response.status).toBe(202);
    const [entry] = await entriesOf('LatePlugin.Run', (found) => found.length === 1);
    expect(entry.timestamp).toBe(occurredAt);
  });

  it('refuses a batch with an invalid event whole, naming its index and field, and records none of it', async () => {
    const good = {
      agentId,
      plugin: 'WholePlugin',
      function: 'Run',
      decision: 'allow',
      durationMs: 1,
    };
    const ids = [eventId(), eventId(), eventId()];
    const ahead = new Date(Date.now() + 10 * 60_000).toISOString();
    const events = [
      { ...good, eventId: ids[0] },
      { ...good, eventId: ids[1] },
      { ...good, eventId: ids[2], occurredAt: ahead },
    ];

    const refused = await audit({ events });
    const fixed = await audit({
      events: events.map((event) => ({ ...event, occurredAt: undefined })),
    });

    expect(refused.status).toBe(400);
    expect(refused.body.message).toBe('events.2.occurredAt is more than 5 minutes ahead of the gateway’s clock');
    // Nothing of the refused batch was claimed: all three are new when it is sent again.
    expect(fixed.body).toEqual({ accepted: 3, duplicates: 0 });
  });

  it.each<[string, (event: Record<string, unknown>) => unknown, string]>([
    ['a batch event without an eventId', ({ eventId: _none, ...event }) => ({ events: [event] }), 'events.0.eventId is required in a batch'],
    ['an eventId of other characters', (event) => ({ events: [{ ...event, eventId: 'evt:1' }] }), 'events.0.eventId is required in a batch'],
    [
      'a field of the wrong type',
      (event) => ({
        events: [event, { ...event, eventId: eventId(), durationMs: 'slow' }],
      }),
      'events.1.durationMs must be a number',
    ],
    ['an unknown field', (event) => ({ events: [{ ...event, colour: 'red' }] }), 'unknown field events.0.colour'],
    ['no events', () => ({ events: [] }), 'events must hold 1 to 500 events, not 0'],
    ['more than 500 events', (event) => ({ events: Array.from({ length: 501 }, () => event) }), 'events must hold 1 to 500 events, not 501'],
    ['events that are not a list', () => ({ events: {} }), 'events must be an array'],
    ['a field beside events', (event) => ({ events: [event], agentId }), 'unknown field agentId'],
    ['a cached event naming no decision', (event) => ({ events: [{ ...event, cached: true }] }), 'events.0.decisionId is required when cached is true'],
    ['an agent of no organization', (event) => ({ events: [{ ...event, agentId: 'agent_nobody' }] }), 'events.0.agentId agent_nobody names no agent of this organization'],
  ])('refuses %s with a 400 naming it', async (_what, bodyOf, message) => {
    const event = {
      agentId,
      plugin: 'BadPlugin',
      function: 'Run',
      decision: 'allow',
      durationMs: 1,
      eventId: eventId(),
    };

    const response = await audit(bodyOf(event));

    expect(response.status).toBe(400);
    expect(response.body.message).toEqual(expect.stringContaining(message));
  });

  it('refuses a cached allow of a denied decision: a cache never carries more than its source', async () => {
    const denied = await decide('/etc/passwd');
    const response = await audit({
      events: [
        {
          agentId,
          plugin: 'FilePlugin',
          function: 'ReadFile',
          decision: 'allow',
          durationMs: 1,
          eventId: eventId(),
          cached: true,
          decisionId: denied,
        },
      ],
    });

    expect(response.status).toBe(400);
    expect(response.body.message).toBe(`events.0.decisionId ${denied} denied the call: its outcome cannot be allow`);
  });

  it('refuses an event older than the organization’s audit retention', async () => {
    const starter = await createOrganization(gateway, 'starter', 'Audit batch starter org');
    const [starterKey, starterAgent] = [await keyOf(starter), await agentOf(starter)];
    const event = {
      agentId: starterAgent,
      plugin: 'OldPlugin',
      function: 'Run',
      decision: 'allow',
      durationMs: 1,
      eventId: eventId(),
    };

    const old = await audit(
      {
        events: [
          {
            ...event,
            occurredAt: new Date(Date.now() - 31 * 86_400_000).toISOString(),
          },
        ],
      },
      starterKey,
    );
    const recent = await audit(
      {
        events: [
          {
            ...event,
            occurredAt: new Date(Date.now() - 29 * 86_400_000).toISOString(),
          },
        ],
      },
      starterKey,
    );

    expect(old.status).toBe(400);
    expect(old.body.message).toBe('events.0.occurredAt is older than the organization’s audit retention (30 days)');
    expect([recent.status, recent.body]).toEqual([202, { accepted: 1, duplicates: 0 }]);
  });

  it('keeps the single-event answer, with occurredAt and cached taken there too', async () => {
    const denied = await decide('/etc/hosts');
    const single = {
      agentId,
      plugin: 'FilePlugin',
      function: 'ReadFile',
      decision: 'deny',
      durationMs: 0,
      eventId: eventId(),
      cached: true,
      decisionId: denied,
    };

    expect((await audit(single)).body).toEqual({
      accepted: true,
      recorded: true,
    });
    expect((await audit(single)).body).toEqual({
      accepted: true,
      recorded: false,
    });
  });

  it('is described in the OpenAPI document: either body, either answer', async () => {
    const document = (
      await call<{
        paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: unknown }> } }>>;
        components: { schemas: Record<string, unknown> };
      }>(gateway.url, 'GET', '/docs-json')
    ).body;

    expect(document.paths['/v1/audit'].post.requestBody.content['application/json'].schema).toEqual({
      oneOf: [{ $ref: '#/components/schemas/AdapterAuditDto' }, { $ref: '#/components/schemas/AdapterAuditBatchDto' }],
    });
    expect(Object.keys(document.components.schemas)).toEqual(expect.arrayContaining(['AdapterAuditBatchDto', 'AuditBatchAcceptedDto']));
  });
});
