import { createHash, createPublicKey } from 'node:crypto';
import { bundleSignatureProblem, SignedBundle } from '../src/core/edge-protocol/bundle-format';
import { call } from './support/http-client';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * The gateway's side of the edge sidecar: the signed bundle with its ETag, idempotent audit
 * ingestion into the hash chain, and the fleet status with sequence gaps.
 */

const POLICY = `name: no-unverified-writes
match: { action: "write:*" }
rules:
  - condition: agent.trust_tier < verified
    action: deny
    reason: Unverified agents cannot write
`;

let gateway: TestGateway;
let org: TestOrganization;

beforeAll(async () => {
  gateway = await startGateway();
  org = await createOrganization(gateway, 'enterprise', 'Bundle org');
});
afterAll(() => gateway?.close());

const admin = <T = Record<string, unknown>>(method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}) =>
  call<T>(gateway.url, method, path, { adminToken: org.adminToken, ...options });

/** A sidecar resends an entry as it is on its disk: the same time with the same id. */
const EDGE_TS = Date.now();

function entry(seq: number, overrides: Record<string, unknown> = {}) {
  return {
    seq,
    id: `aud_sidecartest${seq}x${org.id.slice(-6)}`,
    ts: EDGE_TS + seq,
    traceId: `trace-${seq}`,
    agentId: 'agent_edge',
    agentName: 'edge',
    trustTier: 'verified',
    action: `read:doc/${seq}`,
    method: null,
    path: null,
    decision: 'allow',
    enforced: true,
    rateLimited: false,
    policyName: 'default',
    rule: null,
    reason: null,
    decisionLatencyMs: 0.01,
    latencyMs: 0.2,
    status: 200,
    upstreamStatus: null,
    delegationChain: null,
    input: { resource: `doc/${seq}`, args: { password: 'hunter2' } },
    ...overrides,
  };
}

describe('GET /api/v1/bundle', () => {
  it('needs the admin token', async () => {
    expect((await call(gateway.url, 'GET', '/api/v1/bundle')).status).toBe(401);
  });

  it('serves the organization’s policies, tiers, agents, revocations and keys, signed with the gateway key', async () => {
    expect((await admin('PUT', '/admin/policies/no-unverified-writes', { body: POLICY, headers: { 'content-type': 'application/yaml' } })).status).toBeLessThan(300);
    const kept = await admin<{ id: string }>('POST', '/admin/agents', { body: { name: 'kept', trustTier: 'trusted', tags: ['eu'] } });
    const gone = await admin<{ id: string }>('POST', '/admin/agents', { body: { name: 'gone' } });
    expect((await admin('DELETE', `/admin/agents/${gone.body.id}`)).status).toBe(200);

    const response = await admin<SignedBundle>('GET', '/api/v1/bundle');
    expect(response.status).toBe(200);
    const bundle = response.body;
    expect(bundle).toMatchObject({ format: 'agentgov.bundle/1', orgId: org.id, tokenIssuer: 'http://gateway.test', revoked: [gone.body.id] });
    expect(bundle.policies.map((policy) => policy.name)).toEqual(['no-unverified-writes']);
    expect(bundle.tiers.order).toEqual(['unverified', 'verified', 'trusted', 'privileged']);
    expect(bundle.agents).toEqual(
      expect.arrayContaining([
        { id: kept.body.id, name: 'kept', trustTier: 'trusted', tags: ['eu'], revoked: false },
        { id: gone.body.id, name: 'gone', trustTier: 'unverified', tags: [], revoked: true },
      ]),
    );
    expect(response.headers.get('x-bundle-version')).toBe(bundle.version);
    expect(Date.parse(bundle.version)).toBeGreaterThan(Date.now() - 60_000);
    const jwks = await call<{ keys: Array<Record<string, unknown>> }>(gateway.url, 'GET', '/.well-known/jwks.json');
    const signer = jwks.body.keys.find((key) => key.kid === bundle.signature.kid)!;
    expect(signer).toBeDefined();
    expect(bundleSignatureProblem(bundle, createPublicKey({ key: signer as never, format: 'jwk' }))).toBeNull();
  });

  it('carries the hashes of live API keys, never the keys, and drops a revoked one', async () => {
    const key = await admin<{ id: string; key: string }>('POST', '/admin/api-keys', { body: { name: 'edge' } });
    expect(key.status).toBe(201);
    const hash = createHash('sha256').update(key.body.key).digest('hex');
    const withKey = await admin<SignedBundle>('GET', '/api/v1/bundle');
    expect(withKey.body.apiKeys).toContainEqual({ id: key.body.id, hash });
    expect(withKey.text).not.toContain(key.body.key);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await admin('DELETE', `/admin/api-keys/${key.body.id}`)).status).toBeLessThan(300);
    const revoked = await admin<SignedBundle>('GET', '/api/v1/bundle');
    expect(revoked.body.apiKeys).not.toContainEqual(expect.objectContaining({ id: key.body.id }));
    expect(Date.parse(revoked.body.version)).toBeGreaterThan(Date.parse(withKey.body.version));
  });

  it('answers 304 to If-None-Match while nothing changed, and a newer version after a change', async () => {
    const first = await admin<SignedBundle>('GET', '/api/v1/bundle');
    const etag = first.headers.get('etag')!;
    const again = await admin('GET', '/api/v1/bundle', { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe(etag);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await admin('POST', '/admin/agents', { body: { name: 'newcomer' } });
    const changed = await admin<SignedBundle>('GET', '/api/v1/bundle', { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(Date.parse(changed.body.version)).toBeGreaterThan(Date.parse(first.body.version));
    expect(changed.headers.get('etag')).not.toBe(etag);
  });
});

describe('audit ingestion and the fleet status', () => {
  it('lists a sidecar that fetched, with its mode and bundle version', async () => {
    const fetched = await admin<SignedBundle>('GET', '/api/v1/bundle', { headers: { 'x-sidecar-id': 'sc_fleet-1', 'x-sidecar-mode': 'audit' } });
    const list = await admin<{ sidecars: Array<Record<string, unknown>> }>('GET', '/admin/sidecars');
    expect(list.status).toBe(200);
    expect(list.body.sidecars).toContainEqual(
      expect.objectContaining({ id: 'sc_fleet-1', mode: 'audit', bundleVersion: fetched.body.version, lastSeq: 0, gaps: [], lastSync: expect.any(String) }),
    );
  });

  it('writes entries once into the hash chain as source sidecar, redacted, however often they are sent', async () => {
    const batch = { sidecarId: 'sc_ingest-1', entries: [entry(1), entry(2), entry(3)] };
    const first = await admin('POST', '/api/v1/audit/ingest', { body: batch });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ accepted: 3, duplicates: 0, renumbered: 0, refused: 0, lastSeq: 3 });
    const again = await admin('POST', '/api/v1/audit/ingest', { body: { sidecarId: 'sc_ingest-1', entries: [entry(2), entry(3), entry(4)] } });
    expect(again.body).toEqual({ accepted: 1, duplicates: 2, renumbered: 0, refused: 0, lastSeq: 4 });

    const audit = await admin<{ entries: Array<Record<string, unknown>> }>('GET', '/admin/audit?source=sidecar&limit=100');
    const mine = audit.body.entries.filter((row) => row.agentId === 'agent_edge');
    expect(mine.map((row) => row.action).sort()).toEqual(['read:doc/1', 'read:doc/2', 'read:doc/3', 'read:doc/4']);
    expect(mine.every((row) => row.source === 'sidecar')).toBe(true);
    expect(JSON.stringify(mine)).not.toContain('hunter2');
    const verify = await admin('GET', '/admin/audit/verify');
    expect(verify.body).toMatchObject({ ok: true, brokenAt: null });
  });

  it('reports a range that never arrived as a gap', async () => {
    const body = (from: number, to: number) => ({ sidecarId: 'sc_gappy', entries: Array.from({ length: to - from + 1 }, (_, i) => entry(from + i, { id: `aud_gappy${from + i}x${org.id.slice(-6)}` })) });
    expect((await admin('POST', '/api/v1/audit/ingest', { body: body(1, 10) })).status).toBe(200);
    expect((await admin('POST', '/api/v1/audit/ingest', { body: body(21, 25) })).status).toBe(200);
    const list = await admin<{ sidecars: Array<{ id: string; lastSeq: number; received: number; gaps: unknown[] }> }>('GET', '/admin/sidecars');
    const gappy = list.body.sidecars.find((sidecar) => sidecar.id === 'sc_gappy')!;
    expect(gappy).toMatchObject({ lastSeq: 25, received: 15, gaps: [{ first: 11, last: 20, message: 'sidecar sc_gappy is missing 11-20' }] });
    await admin('POST', '/api/v1/audit/ingest', { body: body(11, 20) });
    const healed = await admin<{ sidecars: Array<{ id: string; gaps: unknown[]; lastSeq: number }> }>('GET', '/admin/sidecars');
    expect(healed.body.sidecars.find((sidecar) => sidecar.id === 'sc_gappy')).toMatchObject({ lastSeq: 25, gaps: [] });
  });

  it('writes and counts entries sent under numbers already received with other ids, instead of skipping them', async () => {
    const batch = (run: string) => ({
      sidecarId: 'sc_renumbered',
      entries: [1, 2, 3].map((seq) => entry(seq, { id: `aud_renum${run}${seq}x${org.id.slice(-6)}`, action: `read:renum/${run}/${seq}` })),
    });
    expect((await admin('POST', '/api/v1/audit/ingest', { body: batch('a') })).body).toEqual({ accepted: 3, duplicates: 0, renumbered: 0, refused: 0, lastSeq: 3 });
    // The sidecar lost its CACHE_DIR and counts from 1 again.
    const reused = await admin('POST', '/api/v1/audit/ingest', { body: batch('b') });
    expect(reused.body).toEqual({ accepted: 3, duplicates: 0, renumbered: 3, refused: 0, lastSeq: 3 });
    // Its resend of the same batch is a duplicate, not renumbered again.
    expect((await admin('POST', '/api/v1/audit/ingest', { body: batch('b') })).body).toEqual({ accepted: 0, duplicates: 3, renumbered: 0, refused: 0, lastSeq: 3 });

    const audit = await admin<{ entries: Array<{ action: string }> }>('GET', '/admin/audit?source=sidecar&limit=100');
    const actions = audit.body.entries.map((row) => row.action).filter((action) => action.startsWith('read:renum/'));
    expect(actions.sort()).toEqual(['read:renum/a/1', 'read:renum/a/2', 'read:renum/a/3', 'read:renum/b/1', 'read:renum/b/2', 'read:renum/b/3']);
    const list = await admin<{ sidecars: Array<{ id: string }> }>('GET', '/admin/sidecars');
    expect(list.body.sidecars.find((sidecar) => sidecar.id === 'sc_renumbered')).toMatchObject({ lastSeq: 3, received: 3, gaps: [], renumbered: 3 });
  });

  it("refuses entries of another organization's agents, leaving their numbers as a gap", async () => {
    const other = await createOrganization(gateway, 'enterprise', 'Other org');
    const stranger = await call<{ id: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: other.adminToken, body: { name: 'stranger' } });
    expect(stranger.status).toBe(201);
    const entries = [1, 2, 3].map((seq) => entry(seq, { id: `aud_foreign${seq}x${org.id.slice(-6)}`, action: `read:foreign/${seq}`, agentId: seq === 2 ? stranger.body.id : 'agent_edge' }));
    const answer = await admin('POST', '/api/v1/audit/ingest', { body: { sidecarId: 'sc_switched', entries } });
    expect(answer.body).toEqual({ accepted: 2, duplicates: 0, renumbered: 0, refused: 1, lastSeq: 3 });
    const audit = await admin<{ entries: Array<{ action: string }> }>('GET', '/admin/audit?source=sidecar&limit=100');
    expect(audit.body.entries.map((row) => row.action).filter((action) => action.startsWith('read:foreign/')).sort()).toEqual(['read:foreign/1', 'read:foreign/3']);
    const list = await admin<{ sidecars: Array<{ id: string }> }>('GET', '/admin/sidecars');
    expect(list.body.sidecars.find((sidecar) => sidecar.id === 'sc_switched')).toMatchObject({ lastSeq: 3, received: 2, gaps: [{ first: 2, last: 2 }] });
  });

  it('refuses a malformed batch naming the field', async () => {
    const bad = await admin('POST', '/api/v1/audit/ingest', { body: { sidecarId: 'sc_bad', entries: [entry(0)] } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/entries\.0\.seq/);
    const noId = await admin('POST', '/api/v1/audit/ingest', { body: { entries: [] } });
    expect(noId.status).toBe(400);
    expect(noId.body.message).toMatch(/sidecarId/);
  });
});
