import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLocalJWKSet, decodeProtectedHeader, JSONWebKeySet, jwtVerify } from 'jose';
import { DataSource } from 'typeorm';
import { AgentsService } from '../src/gateway/agents/agents.service';
import { call, TestResponse } from './support/http-client';
import { createOrganization, startGateway, TEST_PUBLIC_URL, TestGateway, TestOrganization } from './support/test-gateway';

/** Admin API rows for agents (docs/identity.md, docs/security.md). */


const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const DAY_SECONDS = 24 * 60 * 60;

interface AgentBody {
  id: string;
  name: string;
  trustTier: string;
  tags: string[];
  metadata: Record<string, unknown>;
  status: string;
  createdAt: string;
  updatedAt: string;
  revokedAt: string | null;
  token?: string;
  tokenExpiresAt?: string;
}

interface AuditEntry {
  action: string;
  agentId: string | null;
  source: string;
  details: { previous?: Record<string, unknown>; next?: Record<string, unknown> } | null;
}

let gateway: TestGateway;
let org: TestOrganization;

beforeAll(async () => {
  gateway = await startGateway();
  org = await createOrganization(gateway, 'enterprise', 'Identity org');
});
afterAll(() => gateway.close());

function admin<T = AgentBody>(method: string, path: string, body?: unknown, token = org.adminToken): Promise<TestResponse<T>> {
  return call<T>(gateway.url, method, path, { adminToken: token, body });
}

async function createAgent(body: Record<string, unknown> = {}, token = org.adminToken): Promise<AgentBody> {
  const response = await admin('POST', '/admin/agents', { name: 'agent', ...body }, token);
  expect(response.status).toBe(201);
  return response.body;
}

async function verifyWithJwks(token: string, url = gateway.url) {
  const jwks = await call<JSONWebKeySet>(url, 'GET', '/.well-known/jwks.json');
  expect(jwks.status).toBe(200);
  const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks.body), { issuer: TEST_PUBLIC_URL });
  return { payload, protectedHeader, kids: jwks.body.keys.map((key) => key.kid) };
}

/** Polls until `read` returns a value (the audit trail is written asynchronously). */
async function eventually<T>(read: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('POST /admin/agents', () => {
  it('creates an agent with defaults and returns its token once', async () => {
    const before = Date.now();
    const response = await admin('POST', '/admin/agents', { name: 'invoice-bot' });
    expect(response.status).toBe(201);
    const agent = response.body;
    expect(agent).toMatchObject({ name: 'invoice-bot', trustTier: 'unverified', tags: [], metadata: {}, status: 'active', revokedAt: null });
    expect(agent.id).toMatch(/^agent_[0-9a-f]+$/);
    expect(agent.createdAt).toMatch(ISO_MS);
    expect(agent.updatedAt).toMatch(ISO_MS);
    expect(Date.parse(agent.createdAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(typeof agent.token).toBe('string');
    expect(agent.tokenExpiresAt).toMatch(ISO_MS);
  });

  it('stores the supplied tier, tags and metadata', async () => {
    const agent = await createAgent({ name: 'pii-reader', trustTier: 'trusted', tags: ['finance', 'pii'], metadata: { team: 'billing', level: 2 } });
    expect(agent).toMatchObject({ name: 'pii-reader', trustTier: 'trusted', tags: ['finance', 'pii'], metadata: { team: 'billing', level: 2 } });
    const fetched = await admin('GET', `/admin/agents/${agent.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toMatchObject({ id: agent.id, name: 'pii-reader', trustTier: 'trusted', tags: ['finance', 'pii'], metadata: { team: 'billing', level: 2 } });
  });

  it.each(['unverified', 'verified', 'trusted', 'privileged'])('accepts the admin tier %s', async (trustTier) => {
    const agent = await createAgent({ name: `tier-${trustTier}`, trustTier });
    expect(agent.trustTier).toBe(trustTier);
  });

  it('accepts a name of exactly 200 characters', async () => {
    const agent = await createAgent({ name: 'n'.repeat(200) });
    expect(agent.name).toHaveLength(200);
  });

  const DISPLAY_NAME_RULE = 'name must have a visible character and no control characters or lone surrogates';
  it.each([
    ['blank', '   ', DISPLAY_NAME_RULE],
    ['a line break (it forges a line in logs and alerts)', 'bot\nSeverity: info', DISPLAY_NAME_RULE],
    // Refused for any string of an admin body, ahead of validation (docs/security.md "Bad input").
    ['a lone surrogate (stored as U+FFFD, read back changed)', 'bot\ud800', 'name must not contain lone surrogates (UTF-16 halves that UTF-8 cannot carry)'],
  ])('refuses a name that is %s, on create and on change, naming the field', async (_what, name, message) => {
    const created = await admin('POST', '/admin/agents', { name });
    expect(created.status).toBe(400);
    expect(created.body).toMatchObject({ error: 'invalid_request', message });
    const agent = await createAgent({ name: 'renamed-badly' });
    expect((await admin('PATCH', `/admin/agents/${agent.id}`, { name })).status).toBe(400);
    expect((await admin('GET', `/admin/agents/${agent.id}`)).body.name).toBe('renamed-badly');
  });

  it('keeps names with spaces, accents and emoji as sent', async () => {
    expect((await createAgent({ name: ' Équipe factures 😀 ' })).name).toBe(' Équipe factures 😀 ');
  });

  it('issues a JWT that verifies against the JWKS and carries the agent claims', async () => {
    const agent = await createAgent({ name: 'claims-bot', trustTier: 'verified', tags: ['ops'] });
    const nowSeconds = Math.floor(Date.now() / 1000);
    const { payload, protectedHeader, kids } = await verifyWithJwks(agent.token!);
    expect(payload).toMatchObject({ sub: agent.id, name: 'claims-bot', trust: 'verified', tier: 'verified', tags: ['ops'], org: org.id, iss: TEST_PUBLIC_URL });
    expect(Math.abs(payload.iat! - nowSeconds)).toBeLessThanOrEqual(60);
    expect(payload.exp! - payload.iat!).toBe(DAY_SECONDS);
    expect(agent.tokenExpiresAt).toBe(new Date(payload.exp! * 1000).toISOString());
    expect(protectedHeader.kid).toBeDefined();
    expect(kids).toContain(protectedHeader.kid);
  });

  it('issues a token that a tampered copy of does not pass verification', async () => {
    const agent = await createAgent({ name: 'tamper-bot' });
    const [header, payload, signature] = agent.token!.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...claims, tier: 'privileged', trust: 'privileged' })).toString('base64url');
    await expect(verifyWithJwks(`${header}.${forged}.${signature}`)).rejects.toThrow(/signature/i);
  });

  it('uses AGENT_TOKEN_TTL for the token lifetime', async () => {
    const shortLived = await startGateway({ AGENT_TOKEN_TTL: '90m' });
    try {
      const response = await call<AgentBody>(shortLived.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'ttl-bot' } });
      expect(response.status).toBe(201);
      const { payload } = await verifyWithJwks(response.body.token!, shortLived.url);
      expect(payload.exp! - payload.iat!).toBe(5400);
      expect(response.body.tokenExpiresAt).toBe(new Date(payload.exp! * 1000).toISOString());
    } finally {
      await shortLived.close();
    }
  });

  describe('rejects invalid input with 400 invalid_request naming the field', () => {
    let validationOrg: TestOrganization;
    beforeAll(async () => {
      validationOrg = await createOrganization(gateway, 'enterprise', 'Validation org');
    });

    it.each<[string, Record<string, unknown>, RegExp]>([
      ['name missing', { trustTier: 'verified' }, /name/],
      ['name empty', { name: '' }, /name/],
      ['name not a string', { name: 42 }, /name/],
      ['name longer than 200', { name: 'n'.repeat(201) }, /name/],
      ['name with a NUL character', { name: 'a\u0000b' }, /name/],
      ['trustTier unknown', { name: 'a', trustTier: 'admin' }, /trustTier/],
      ['trustTier alias of another context', { name: 'a', trustTier: 'untrusted' }, /trustTier/],
      ['trustTier analytics alias', { name: 'a', trustTier: 'sandboxed' }, /trustTier/],
      ['trustTier wrong case', { name: 'a', trustTier: 'Trusted' }, /trustTier/],
      ['tags not an array', { name: 'a', tags: 'finance,pii' }, /tags/],
      ['tag not a string', { name: 'a', tags: [7] }, /tag/],
      ['tag with spaces', { name: 'a', tags: ['bad tag'] }, /tag/],
      ['tag empty', { name: 'a', tags: [''] }, /tag/],
      ['metadata a string', { name: 'a', metadata: 'team=billing' }, /metadata/],
      ['metadata an array', { name: 'a', metadata: ['team'] }, /metadata/],
      ['unknown field', { name: 'a', role: 'admin' }, /role/],
    ])('%s', async (_case, body, field) => {
      const response = await admin('POST', '/admin/agents', body, validationOrg.adminToken);
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ error: 'invalid_request' });
      expect((response.body as unknown as { message: string }).message).toMatch(field);
    });

    it('created nothing for any of the refused requests', async () => {
      const list = await admin<{ agents: AgentBody[] }>('GET', '/admin/agents?includeRevoked=true', undefined, validationOrg.adminToken);
      expect(list.status).toBe(200);
      expect(list.body.agents).toEqual([]);
    });
  });
});

describe('GET /admin/agents', () => {
  it('lists the organization’s agents without tokens', async () => {
    const listOrg = await createOrganization(gateway, 'enterprise', 'List org');
    const first = await createAgent({ name: 'first', tags: ['a'] }, listOrg.adminToken);
    const second = await createAgent({ name: 'second', trustTier: 'privileged' }, listOrg.adminToken);
    const list = await admin<{ agents: AgentBody[] }>('GET', '/admin/agents', undefined, listOrg.adminToken);
    expect(list.status).toBe(200);
    expect(list.body.agents.map((agent) => [agent.id, agent.name, agent.trustTier])).toEqual([
      [first.id, 'first', 'unverified'],
      [second.id, 'second', 'privileged'],
    ]);
    for (const agent of list.body.agents) {
      expect(agent).not.toHaveProperty('token');
      expect(agent).not.toHaveProperty('tokenExpiresAt');
      expect(agent.createdAt).toMatch(ISO_MS);
    }
    expect(list.text).not.toContain(first.token!);
    expect(list.text).not.toContain(second.token!);
  });

  it('refuses includeRevoked values other than true or false', async () => {
    const response = await admin('GET', '/admin/agents?includeRevoked=maybe');
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: 'invalid_request', message: expect.stringMatching(/includeRevoked/) });
  });
});

describe('GET /admin/agents/:id', () => {
  it('returns the agent without its token', async () => {
    const agent = await createAgent({ name: 'single', trustTier: 'verified', tags: ['x'], metadata: { k: 'v' } });
    const response = await admin('GET', `/admin/agents/${agent.id}`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      id: agent.id,
      name: 'single',
      trustTier: 'verified',
      tags: ['x'],
      metadata: { k: 'v' },
      status: 'active',
      createdAt: agent.createdAt,
      updatedAt: agent.updatedAt,
      revokedAt: null,
    });
  });
});

describe('PATCH /admin/agents/:id', () => {
  it('changes only the supplied fields and advances updatedAt', async () => {
    const agent = await createAgent({ name: 'patch-me', trustTier: 'verified', tags: ['old'], metadata: { a: 1 } });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const response = await admin('PATCH', `/admin/agents/${agent.id}`, { tags: ['new', 'tags'] });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ id: agent.id, name: 'patch-me', trustTier: 'verified', tags: ['new', 'tags'], metadata: { a: 1 } });
    expect(response.body.updatedAt).toMatch(ISO_MS);
    expect(Date.parse(response.body.updatedAt)).toBeGreaterThan(Date.parse(agent.updatedAt));
    const fetched = await admin('GET', `/admin/agents/${agent.id}`);
    expect(fetched.body).toMatchObject({ name: 'patch-me', trustTier: 'verified', tags: ['new', 'tags'], metadata: { a: 1 }, updatedAt: response.body.updatedAt });
    expect(fetched.body.createdAt).toBe(agent.createdAt);
  });

  it('changes name, tier and metadata (metadata is replaced whole)', async () => {
    const agent = await createAgent({ name: 'before', metadata: { a: 1, b: 2 } });
    const response = await admin('PATCH', `/admin/agents/${agent.id}`, { name: 'after', trustTier: 'privileged', metadata: { c: 3 } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ name: 'after', trustTier: 'privileged', tags: [], metadata: { c: 3 } });
  });

  it('records previous and new values of exactly the changed fields in the audit trail', async () => {
    const agent = await createAgent({ name: 'audited', trustTier: 'unverified', tags: ['t1'] });
    const response = await admin('PATCH', `/admin/agents/${agent.id}`, { name: 'audited', trustTier: 'trusted', tags: ['t1', 't2'] });
    expect(response.status).toBe(200);
    const entry = await eventually(async () => {
      const page = await admin<{ entries: AuditEntry[] }>('GET', `/admin/audit?agentId=${agent.id}&limit=100`);
      expect(page.status).toBe(200);
      return page.body.entries.find((candidate) => candidate.action.includes('update'));
    });
    expect(entry.agentId).toBe(agent.id);
    expect(entry.details!.previous).toEqual({ trustTier: 'unverified', tags: ['t1'] });
    expect(entry.details!.next).toEqual({ trustTier: 'trusted', tags: ['t1', 't2'] });
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['trustTier unknown', { trustTier: 'root' }, /trustTier/],
    ['trustTier identity alias', { trustTier: 'untrusted' }, /trustTier/],
    ['trustTier adapter alias', { trustTier: 'elevated' }, /trustTier/],
    ['name empty', { name: '' }, /name/],
    ['name longer than 200', { name: 'x'.repeat(201) }, /name/],
    ['tags not an array', { tags: 'a' }, /tags/],
    ['bad tag', { tags: ['ok', 'not ok'] }, /tag/],
    ['metadata not an object', { metadata: 5 }, /metadata/],
    ['unknown field', { status: 'revoked' }, /status/],
    ['name null', { name: null }, /name/],
    ['trustTier null', { trustTier: null }, /trustTier/],
    ['tags null', { tags: null }, /tags/],
    ['metadata null', { metadata: null }, /metadata/],
  ])('refuses %s with 400 invalid_request and leaves the agent unchanged', async (_case, body, field) => {
    const agent = await createAgent({ name: 'stable', trustTier: 'verified', tags: ['keep'] });
    const response = await admin('PATCH', `/admin/agents/${agent.id}`, body);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: 'invalid_request' });
    expect((response.body as unknown as { message: string }).message).toMatch(field);
    const fetched = await admin('GET', `/admin/agents/${agent.id}`);
    expect(fetched.body).toMatchObject({ name: 'stable', trustTier: 'verified', tags: ['keep'], status: 'active', updatedAt: agent.updatedAt });
  });
});

describe('DELETE /admin/agents/:id', () => {
  it('revokes: status revoked, revokedAt set, idempotent, hidden from the default list', async () => {
    const agent = await createAgent({ name: 'to-revoke' });
    const revoked = await admin('DELETE', `/admin/agents/${agent.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: agent.id, name: 'to-revoke', status: 'revoked' });
    expect(revoked.body.revokedAt).toMatch(ISO_MS);

    const again = await admin('DELETE', `/admin/agents/${agent.id}`);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(revoked.body);

    const fetched = await admin('GET', `/admin/agents/${agent.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toMatchObject({ status: 'revoked', revokedAt: revoked.body.revokedAt });

    const active = await admin<{ agents: AgentBody[] }>('GET', '/admin/agents');
    expect(active.body.agents.map((a) => a.id)).not.toContain(agent.id);
    const all = await admin<{ agents: AgentBody[] }>('GET', '/admin/agents?includeRevoked=true');
    expect(all.body.agents.find((a) => a.id === agent.id)).toMatchObject({ status: 'revoked' });
    const explicitFalse = await admin<{ agents: AgentBody[] }>('GET', '/admin/agents?includeRevoked=false');
    expect(explicitFalse.body.agents.map((a) => a.id)).not.toContain(agent.id);
  });

  it('stays revoked when PATCHes race with it (revocation is permanent)', async () => {
    for (let round = 0; round < 25; round++) {
      const agent = await createAgent({ name: `racing-${round}` });
      const [tagged, revoked, renamed] = await Promise.all([
        admin('PATCH', `/admin/agents/${agent.id}`, { tags: ['raced'] }),
        admin('DELETE', `/admin/agents/${agent.id}`),
        admin('PATCH', `/admin/agents/${agent.id}`, { name: `renamed-${round}` }),
      ]);
      expect(revoked.status).toBe(200);
      for (const patch of [tagged, renamed]) expect([200, 409]).toContain(patch.status);
      const fetched = await admin('GET', `/admin/agents/${agent.id}`);
      expect(fetched.body).toMatchObject({ status: 'revoked', revokedAt: revoked.body.revokedAt });
    }
  });

  it('stores a revocation with its policy version or not at all', async () => {
    const agent = await createAgent({ name: 'versioned-revocation' });
    const database = gateway.app.get(DataSource);
    const fn = `fail_version_${agent.id.replace(/[^a-z0-9]/gi, '_')}`;
    // The version insert fails for this agent only (other test files share the database).
    await database.query(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no versions now'; END $$`);
    await database.query(`CREATE TRIGGER ${fn} BEFORE INSERT ON policy_versions FOR EACH ROW WHEN (NEW.policy_name = '${agent.id}') EXECUTE FUNCTION ${fn}()`);
    try {
      const failed = await admin('DELETE', `/admin/agents/${agent.id}`);
      expect(failed.status).toBeGreaterThanOrEqual(500);
      // Stored apart, the revocation stayed while its version was lost, and the retry below found
      // it done: policy_version never moved and decision caches kept the agent's allows.
      expect((await admin('GET', `/admin/agents/${agent.id}`)).body.status).toBe('active');
    } finally {
      await database.query(`DROP TRIGGER ${fn} ON policy_versions`);
      await database.query(`DROP FUNCTION ${fn}()`);
    }
    expect((await admin('DELETE', `/admin/agents/${agent.id}`)).body.status).toBe('revoked');
    const history = await admin<{ versions: Array<{ policy: string; kind: string }> }>('GET', '/admin/policies/versions');
    expect(history.body.versions.filter((version) => version.policy === agent.id)).toEqual([expect.objectContaining({ kind: 'agent_revoked' })]);
  });

  it('refuses to PATCH a revoked agent with 409 agent_revoked', async () => {
    const agent = await createAgent({ name: 'gone' });
    expect((await admin('DELETE', `/admin/agents/${agent.id}`)).status).toBe(200);
    const response = await admin('PATCH', `/admin/agents/${agent.id}`, { trustTier: 'privileged' });
    expect(response.status).toBe(409);
    expect(response.body).toMatchObject({ error: 'agent_revoked', message: expect.any(String) });
    expect((await admin('GET', `/admin/agents/${agent.id}`)).body.trustTier).toBe('unverified');
  });
});

describe('authentication', () => {
  const routes: Array<[string, string]> = [
    ['GET', '/admin/agents'],
    ['POST', '/admin/agents'],
    ['GET', '/admin/agents/agent_000000000000000000000000'],
    ['PATCH', '/admin/agents/agent_000000000000000000000000'],
    ['DELETE', '/admin/agents/agent_000000000000000000000000'],
    ['GET', '/admin/audit'],
    ['GET', '/admin/audit/stats'],
    ['GET', '/admin/audit/verify'],
    ['GET', '/admin/organization'],
  ];

  it.each(routes)('%s %s without X-Admin-Token is 401', async (method, path) => {
    const body = method === 'POST' || method === 'PATCH' ? { name: 'x' } : undefined;
    const response = await call(gateway.url, method, path, { body });
    expect(response.status).toBe(401);
    expect(response.body).toMatchObject({ error: 'unauthorized', message: expect.any(String) });
  });

  it.each(routes)('%s %s with a wrong X-Admin-Token is 401', async (method, path) => {
    const body = method === 'POST' || method === 'PATCH' ? { name: 'x' } : undefined;
    const response = await call(gateway.url, method, path, { adminToken: `${org.adminToken}x`, body });
    expect(response.status).toBe(401);
    expect(response.body).toMatchObject({ error: 'unauthorized', message: expect.any(String) });
  });

  it('creates nothing when the token is wrong', async () => {
    const response = await call(gateway.url, 'POST', '/admin/agents', { adminToken: 'adm_wrong_wrong_wrong_wrong', body: { name: 'intruder' } });
    expect(response.status).toBe(401);
    const list = await admin<{ agents: AgentBody[] }>('GET', '/admin/agents?includeRevoked=true');
    expect(list.body.agents.map((agent) => agent.name)).not.toContain('intruder');
  });
});

describe('cross-organization access', () => {
  let other: TestOrganization;
  let foreign: AgentBody;

  beforeAll(async () => {
    other = await createOrganization(gateway, 'enterprise', 'Other org');
    foreign = await createAgent({ name: 'foreign', trustTier: 'verified' }, other.adminToken);
  });

  it('is 404 on GET', async () => {
    const response = await admin('GET', `/admin/agents/${foreign.id}`);
    expect(response.status).toBe(404);
    expect(response.body).toMatchObject({ error: 'not_found' });
  });

  it('is 403 on PATCH', async () => {
    const response = await admin('PATCH', `/admin/agents/${foreign.id}`, { trustTier: 'privileged' });
    expect(response.status).toBe(403);
    expect(response.body).toMatchObject({ error: 'forbidden', message: expect.any(String) });
  });

  it('is 404 on DELETE', async () => {
    const response = await admin('DELETE', `/admin/agents/${foreign.id}`);
    expect(response.status).toBe(404);
    expect(response.body).toMatchObject({ error: 'not_found' });
  });

  it('leaves the other organization’s agent untouched', async () => {
    const response = await admin('GET', `/admin/agents/${foreign.id}`, undefined, other.adminToken);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ name: 'foreign', trustTier: 'verified', status: 'active', revokedAt: null });
  });
});

describe('unknown agents', () => {
  it.each(['GET', 'PATCH', 'DELETE'])('%s of an unknown id is 404 not_found', async (method) => {
    const response = await admin(method, '/admin/agents/agent_ffffffffffffffffffffffff', method === 'PATCH' ? { name: 'x' } : undefined);
    expect(response.status).toBe(404);
    expect(response.body).toMatchObject({ error: 'not_found', message: expect.any(String) });
  });
});

describe('plan limits', () => {
  it('refuses the third agent on the free plan, and a revocation frees a slot', async () => {
    const free = await createOrganization(gateway, 'free', 'Free org');
    const first = await createAgent({ name: 'one' }, free.adminToken);
    await createAgent({ name: 'two' }, free.adminToken);

    const third = await admin('POST', '/admin/agents', { name: 'three' }, free.adminToken);
    expect(third.status).toBe(403);
    expect(third.body).toEqual({ error: 'plan_limit_exceeded', message: 'The free plan allows 2 agents', limit: 2, plan: 'free' });

    const list = await admin<{ agents: AgentBody[] }>('GET', '/admin/agents', undefined, free.adminToken);
    expect(list.body.agents.map((agent) => agent.name)).toEqual(['one', 'two']);

    expect((await admin('DELETE', `/admin/agents/${first.id}`, undefined, free.adminToken)).status).toBe(200);
    const afterRevoke = await admin('POST', '/admin/agents', { name: 'three' }, free.adminToken);
    expect(afterRevoke.status).toBe(201);
    expect(afterRevoke.body.name).toBe('three');
  });

  it('does not let concurrent creates pass the limit', async () => {
    const free = await createOrganization(gateway, 'free', 'Concurrent free org');
    const responses = await Promise.all([1, 2, 3, 4].map((n) => admin('POST', '/admin/agents', { name: `c${n}` }, free.adminToken)));
    expect(responses.map((response) => response.status).sort()).toEqual([201, 201, 403, 403]);
    const list = await admin<{ agents: AgentBody[] }>('GET', '/admin/agents', undefined, free.adminToken);
    expect(list.body.agents).toHaveLength(2);
  });
});

describe('signing key rotation', () => {
  it('keeps publishing a retired key while a token it signed with a longer --ttl is still valid', async () => {
    const keys = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-rotation-'));
    let old: TestGateway | undefined = await startGateway({ SIGNING_KEY_FILE: path.join(keys, 'old.pem') });
    let fresh: TestGateway | undefined;
    try {
      const delegator = await createAgent({ name: 'long-lived' });
      const helper = await createAgent({ name: 'helper' });
      // What `ags agents token ID --ttl 7d` does.
      const week = await old.app.get(AgentsService).issueToken({ orgId: org.id, tokenId: 'cli' }, delegator.id, 7 * DAY_SECONDS * 1000);
      const { kid } = decodeProtectedHeader(week.token);
      await old.close();
      old = undefined;
      // Two days on, the key replaced since: its last use is older than AGENT_TOKEN_TTL.
      await gateway.app.get(DataSource).query(`UPDATE signing_keys SET last_used_at = now() - interval '2 days' WHERE kid = $1`, [kid]);
      fresh = await startGateway({ SIGNING_KEY_FILE: path.join(keys, 'new.pem') });
      const jwks = await call<JSONWebKeySet>(fresh.url, 'GET', '/.well-known/jwks.json');
      expect(jwks.body.keys.map((key) => key.kid)).toContain(kid);
      const delegated = await call(fresh.url, 'POST', '/api/v1/identity/delegate', { bearer: week.token, body: { agentId: helper.id, ttl: '1h' } });
      expect(delegated.status).toBe(201);
    } finally {
      await old?.close();
      await fresh?.close();
      fs.rmSync(keys, { recursive: true, force: true });
    }
  });
});
