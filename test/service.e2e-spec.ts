import { call, TestResponse } from './support/http-client';
import { createOrganization, startGateway, TEST_PUBLIC_URL, TestGateway, TestOrganization } from './support/test-gateway';
import { ownDatabase } from './support/own-database';

/** Service surface: /json, /health, docs, the error shape, body limits, trace ids. */


// eslint-disable-next-line @typescript-eslint/no-require-imports
const PACKAGE_VERSION = (require('../package.json') as { version: string }).version;
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const MIB = 1024 * 1024;

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { security?: Array<Record<string, string[]>>; responses: Record<string, unknown> }>>;
  components: {
    securitySchemes: Record<string, { type: string; in?: string; name?: string }>;
    schemas: Record<string, { properties: Record<string, { enum?: string[] }> }>;
  };
}

let gateway: TestGateway;
let org: TestOrganization;

beforeAll(async () => {
  gateway = await startGateway();
  org = await createOrganization(gateway, 'enterprise', 'Service org');
});
afterAll(() => gateway.close());

/** A JSON body of exactly `bytes` bytes that is a valid agent creation. */
function agentBodyOfSize(bytes: number): string {
  const skeleton = JSON.stringify({ name: 'big', metadata: { blob: '' } });
  return JSON.stringify({ name: 'big', metadata: { blob: 'a'.repeat(bytes - skeleton.length) } });
}

/** Error bodies must never leak internals. */
function expectNoInternals(response: TestResponse): void {
  expect(response.text).not.toMatch(/\n\s+at /);
  expect(response.text).not.toMatch(/\bat [\w.<>]+ \(/);
  expect(response.text).not.toMatch(/\b(SELECT|INSERT|UPDATE|DELETE FROM)\b/);
  expect(response.text).not.toMatch(/node_modules|QueryFailedError|\.ts:\d+/);
}


describe('GET /json', () => {
  it('names the service, its version, mode and docs', async () => {
    const response = await call(gateway.url, 'GET', '/json');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/application\/json/);
    expect(response.body).toEqual({ name: expect.any(String), version: PACKAGE_VERSION, mode: 'enforce', docs: `${TEST_PUBLIC_URL}/docs` });
    expect((response.body.name as string).length).toBeGreaterThan(0);
    expect(new URL(response.body.docs as string).pathname).toBe('/docs');
  });

  it('reports MODE=audit in /json and /health', async () => {
    const audit = await startGateway({ MODE: 'audit' });
    try {
      expect((await call(audit.url, 'GET', '/json')).body.mode).toBe('audit');
      expect((await call(audit.url, 'GET', '/health')).body.mode).toBe('audit');
    } finally {
      await audit.close();
    }
  });
});

describe('GET /health', () => {
  it('is healthy with the database up, without authentication', async () => {
    const response = await call<Record<string, unknown> & { database: Record<string, unknown> }>(gateway.url, 'GET', '/health');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'healthy', version: PACKAGE_VERSION, mode: 'enforce', database: { status: 'up' } });
    expect(response.body.timestamp).toMatch(ISO_MS);
    expect(Math.abs(Date.parse(response.body.timestamp as string) - Date.now())).toBeLessThan(60_000);
  });

  it('answers 503 unhealthy when the database is down', async () => {
    const database = await ownDatabase();
    try {
      const instance = await startGateway({ DATABASE_URL: database.url });
      try {
        expect((await call(instance.url, 'GET', '/health')).status).toBe(200);
        await database.takeDown();
        const response = await call<Record<string, unknown> & { database: Record<string, unknown> }>(instance.url, 'GET', '/health');
        expect(response.status).toBe(503);
        expect(response.body).toMatchObject({ status: 'unhealthy', version: PACKAGE_VERSION, mode: 'enforce', database: { status: 'down' } });
        expect(response.body.timestamp).toMatch(ISO_MS);
        expectNoInternals(response);
      } finally {
        await instance.close();
        // The cluster-event listener's pending reconnect timer is not cancelled by close and
        // fires up to 1 s later; let it run while this test file is still loaded.
        await new Promise((resolve) => setTimeout(resolve, 1100));
      }
    } finally {
      await database.dispose();
    }
  });
});

describe('API documentation', () => {
  it('serves Swagger UI at /docs', async () => {
    const response = await call(gateway.url, 'GET', '/docs');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/html/);
    expect(response.text).toMatch(/swagger-ui/i);
  });

  it('serves an OpenAPI 3 document listing every route with the admin-token scheme', async () => {
    const response = await call<OpenApiDocument>(gateway.url, 'GET', '/docs-json');
    expect(response.status).toBe(200);
    const document = response.body;
    expect(document.openapi).toMatch(/^3\./);
    const expected: Record<string, string[]> = {
      '/admin/agents': ['get', 'post'],
      '/admin/agents/{id}': ['get', 'patch', 'delete'],
      '/admin/audit': ['get'],
      '/admin/audit/stats': ['get'],
      '/admin/audit/verify': ['get'],
      '/admin/organization': ['get'],
      '/health': ['get'],
      '/json': ['get'],
      '/.well-known/jwks.json': ['get'],
    };
    for (const [path, methods] of Object.entries(expected)) {
      expect(Object.keys(document.paths[path] ?? {})).toEqual(expect.arrayContaining(methods));
    }
    const [schemeName, scheme] = Object.entries(document.components.securitySchemes).find(([, candidate]) => candidate.name === 'X-Admin-Token') ?? [];
    expect(scheme).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Admin-Token' });
    for (const [path, methods] of Object.entries(expected).filter(([path]) => path.startsWith('/admin/'))) {
      for (const method of methods) expect(document.paths[path][method].security).toEqual(expect.arrayContaining([{ [schemeName!]: [] }]));
    }
    for (const path of ['/health', '/json', '/.well-known/jwks.json']) {
      expect(document.paths[path].get.security ?? []).toEqual([]);
    }
  });
});

describe('API documentation of the identity and policy admin routes', () => {
  let document: OpenApiDocument;
  beforeAll(async () => {
    document = (await call<OpenApiDocument>(gateway.url, 'GET', '/docs-json')).body;
  });

  it.each<[string, string, string, unknown]>([
    ['put', '/admin/policies/{name}', '/admin/policies/documented', { name: 'documented', rules: [{ condition: 'args.x == "y"', action: 'deny', reason: 'r' }] }],
    ['get', '/admin/agents', '/admin/agents?includeRevoked=maybe', undefined],
    ['post', '/admin/api-keys', '/admin/api-keys', { name: 5 }],
    ['get', '/admin/policies/versions', '/admin/policies/versions?limit=0', undefined],
    ['post', '/admin/policies/validate', '/admin/policies/validate', '{"broken":'],
  ])('lists the status %s %s answers', async (method, documented, path, body) => {
    const response = await call(gateway.url, method.toUpperCase(), path, {
      adminToken: org.adminToken,
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(Object.keys(document.paths[documented][method].responses)).toContain(String(response.status));
  });

  it('lists every kind of change the policy version history holds', async () => {
    const agent = await call<{ id: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, body: { name: 'versioned' } });
    await call(gateway.url, 'PATCH', `/admin/agents/${agent.body.id}`, { adminToken: org.adminToken, body: { trustTier: 'trusted' } });
    await call(gateway.url, 'DELETE', `/admin/agents/${agent.body.id}`, { adminToken: org.adminToken });
    const key = await call<{ id: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken: org.adminToken, body: {} });
    await call(gateway.url, 'DELETE', `/admin/api-keys/${key.body.id}`, { adminToken: org.adminToken });
    const history = await call<{ versions: Array<{ kind: string }> }>(gateway.url, 'GET', '/admin/policies/versions', { adminToken: org.adminToken });
    const kinds = new Set(history.body.versions.map((version) => version.kind));
    expect([...kinds]).toEqual(expect.arrayContaining(['agent_changed', 'agent_revoked', 'apikey_revoked']));
    const documented = document.components.schemas.PolicyVersionView.properties.kind.enum;
    for (const kind of kinds) expect(documented).toContain(kind);
  });
});

describe('errors', () => {
  it.each([
    ['GET', '/no/such/route'],
    ['POST', '/admin/agents/x/y'],
    ['GET', '/admin/nothing-here'],
  ])('%s %s is 404 not_found', async (method, path) => {
    const response = await call(gateway.url, method, path, { adminToken: org.adminToken });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: 'not_found', message: expect.any(String) });
    expectNoInternals(response);
  });

  it('answers malformed JSON with 400 invalid_json', async () => {
    const response = await call(gateway.url, 'POST', '/admin/agents', {
      adminToken: org.adminToken,
      headers: { 'content-type': 'application/json' },
      body: '{"name": "broken",',
    });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: 'invalid_json', message: 'Request body is not valid JSON' });
    expectNoInternals(response);
  });

  it.each(['null', '"name"', '42'])('answers the JSON %s, valid but no object, saying an object is expected', async (body) => {
    const response = await call(gateway.url, 'POST', '/admin/agents', { adminToken: org.adminToken, headers: { 'content-type': 'application/json' }, body });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: 'invalid_json', message: 'Request body must be a JSON object' });
  });

  it('accepts a JSON body just under the 1 MiB default', async () => {
    const response = await call(gateway.url, 'POST', '/admin/agents', {
      adminToken: org.adminToken,
      headers: { 'content-type': 'application/json' },
      body: agentBodyOfSize(MIB - 64),
    });
    expect(response.status).toBe(201);
  });

  it('answers a JSON body over the 1 MiB default with 413 payload_too_large', async () => {
    const response = await call(gateway.url, 'POST', '/admin/agents', {
      adminToken: org.adminToken,
      headers: { 'content-type': 'application/json' },
      body: agentBodyOfSize(MIB + 1),
    });
    expect(response.status).toBe(413);
    expect(response.body).toEqual({ error: 'payload_too_large', message: expect.any(String) });
    expectNoInternals(response);
  });

  it('applies MAX_JSON_BYTES', async () => {
    const small = await startGateway({ MAX_JSON_BYTES: '2048' });
    try {
      const send = (bytes: number) =>
        call(small.url, 'POST', '/admin/agents', { adminToken: org.adminToken, headers: { 'content-type': 'application/json' }, body: agentBodyOfSize(bytes) });
      expect((await send(2048)).status).toBe(201);
      const over = await send(2049);
      expect(over.status).toBe(413);
      expect(over.body).toMatchObject({ error: 'payload_too_large' });
    } finally {
      await small.close();
    }
  });

  it.each<[string, string, string, unknown]>([
    ['an invalid field', 'POST', '/admin/agents', { name: 'x', trustTier: 'god' }],
    ['an unknown agent', 'GET', '/admin/agents/agent_0123', undefined],
    ['an id with SQL in it', 'GET', `/admin/agents/${encodeURIComponent("x' OR '1'='1")}`, undefined],
    ['a bad audit cursor', 'GET', '/admin/audit?cursor=bm90LWEtY3Vyc29y', undefined],
    ['a bad audit timestamp', 'GET', '/admin/audit?from=yesterday', undefined],
    ['a bad audit limit', 'GET', '/admin/audit?limit=-5', undefined],
    ['a bad stats period', 'GET', '/admin/audit/stats?period=1y', undefined],
  ])('answers %s with a 4xx {error, message} and no internals', async (_case, method, path, body) => {
    const response = await call(gateway.url, method, path, { adminToken: org.adminToken, body });
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
    expect(response.body).toMatchObject({ error: expect.any(String), message: expect.any(String) });
    expectNoInternals(response);
  });

  it('answers deeply nested JSON without a 500', async () => {
    const depth = 2000;
    const response = await call(gateway.url, 'POST', '/admin/agents', {
      adminToken: org.adminToken,
      headers: { 'content-type': 'application/json' },
      body: `{"name":"deep","metadata":{"d":${'['.repeat(depth)}${']'.repeat(depth)}}}`,
    });
    expect(response.body.error).not.toBe('internal_error');
    expect(response.status).toBeLessThan(500);
    expectNoInternals(response);
  });
});

describe('X-Trace-ID', () => {
  it('echoes a client-sent trace id', async () => {
    const response = await call(gateway.url, 'GET', '/json', { headers: { 'x-trace-id': 'client-trace-42' } });
    expect(response.headers.get('x-trace-id')).toBe('client-trace-42');
  });

  it('returns a new 32-hex trace id when the client sent none, different per request', async () => {
    const first = await call(gateway.url, 'GET', '/json');
    const second = await call(gateway.url, 'GET', '/json');
    expect(first.headers.get('x-trace-id')).toMatch(/^[0-9a-f]{32}$/);
    expect(second.headers.get('x-trace-id')).toMatch(/^[0-9a-f]{32}$/);
    expect(first.headers.get('x-trace-id')).not.toBe(second.headers.get('x-trace-id'));
  });

  it('carries the trace id on error responses too', async () => {
    const response = await call(gateway.url, 'GET', '/admin/agents', { headers: { 'x-trace-id': 'trace-on-401' } });
    expect(response.status).toBe(401);
    expect(response.headers.get('x-trace-id')).toBe('trace-on-401');
  });
});
