import { call, TestResponse } from './support/http-client';
import { GatewayProcess, gatewayReady, killGateway, launchGateway } from './support/gateway-process';
import { OwnDatabase, ownDatabase } from './support/own-database';
import { TEST_ADMIN_TOKEN, TEST_PUBLIC_URL, testDatabaseKind } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * `matches` runs in time linear in the argument (docs/policies.md "Regular expressions"), so a
 * hostile argument cannot stall the gateway for everyone; what RE2 cannot match is refused at
 * load with the reason; `match` globs ignore case, so a deny is not evaded by changing case.
 * The gateway runs as its own process (`node dist/src/main.js`), on a database of its own: a
 * gateway stalled by a regular expression must not stall the test that times it.
 */

/** Prompt, for a request through a gateway on a busy 2-core machine; the backtracking engine took 11 s. */
const PROMPT_MS = 2000;

let database: OwnDatabase;
let upstream: TestUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  database = await ownDatabase();
  upstream = await startUpstream();
  gateway = await launchGateway({
    DATABASE_URL: database.url,
    DATABASE_POOL_MAX: testDatabaseKind() === 'pglite' ? '1' : '4',
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    PUBLIC_URL: TEST_PUBLIC_URL,
    SIGNING_KEY_FILE: process.env.TEST_SIGNING_KEY_FILE!,
    POLICIES_FILE: '/dev/null',
    UPSTREAM_URL: upstream.url,
    AUDIT_FLUSH_MS: '10',
    // gatewayReady waits for the 'gateway listening' line, logged at info.
    LOG_LEVEL: 'info',
  });
  await gatewayReady(gateway);
});
afterAll(async () => {
  await killGateway(gateway);
  await upstream.close();
  await database.dispose();
});

function putPolicy(name: string, yaml: string): Promise<TestResponse> {
  return call(gateway.url, 'PUT', `/admin/policies/${name}`, { adminToken: TEST_ADMIN_TOKEN, body: yaml, headers: { 'content-type': 'application/yaml' } });
}

function denyPolicy(name: string, condition: string, action?: string): string {
  return [
    `name: ${name}`,
    ...(action === undefined ? [] : [`match: { action: ${JSON.stringify(action)} }`]),
    'rules:',
    `  - condition: ${JSON.stringify(condition)}`,
    '    action: deny',
    `    reason: ${name} refuses`,
    '',
  ].join('\n');
}

async function createAgent(): Promise<string> {
  const created = await call<{ token: string }>(gateway.url, 'POST', '/admin/agents', { adminToken: TEST_ADMIN_TOKEN, body: { name: `regex-bot-${Date.now()}` } });
  expect(created.status).toBe(201);
  return created.body.token;
}

/** A proxied GET and how long its answer took. */
async function timedProxy(token: string, path: string): Promise<{ status: number; ms: number }> {
  const started = Date.now();
  const response = await call(gateway.url, 'GET', `/proxy${path}`, { bearer: token, timeoutMs: 60_000 });
  return { status: response.status, ms: Date.now() - started };
}

describe('regular expressions', () => {
  it('answers a 3,000-character argument against .*@.*\\..* promptly, and a request in parallel too', async () => {
    const loaded = await putPolicy('email-shape', denyPolicy('email-shape', 'args.email matches ".*@.*\\\\..*"', 'read:signup*'));
    expect([200, 201]).toContain(loaded.status);
    const token = await createAgent();
    // Warm both paths up, so the timed pair measures matching rather than first-request costs.
    expect((await timedProxy(token, '/signup?email=a@b.c')).status).toBe(403);
    expect((await timedProxy(token, '/elsewhere')).status).toBe(200);

    const hostile = '@'.repeat(3000);
    const [matched, other] = await Promise.all([timedProxy(token, `/signup?email=${hostile}`), timedProxy(token, '/elsewhere/in-parallel')]);
    expect(matched.ms).toBeLessThan(PROMPT_MS);
    expect(other.ms).toBeLessThan(PROMPT_MS);
    expect(matched.status).toBe(200);
    expect(other.status).toBe(200);
  });

  it.each([
    ['a backreference', 'args.q matches "(a)\\\\1"', /backreference \\1 at offset 3 is not supported: RE2 matches in linear time and has no backreferences/],
    ['a lookahead', 'args.q matches "^(?!admin)"', /lookaround \(\?! at offset 1 is not supported: RE2 matches in linear time and has no lookahead or lookbehind/],
    ['a lookbehind', 'args.q matches "(?<=x)y"', /lookaround \(\?<= at offset 0 is not supported/],
  ])('refuses %s at load: 400 invalid_policy naming the problem, at its place in the pattern', async (_what, condition, message) => {
    const source = denyPolicy('needs-backtracking', condition);
    const refused = await putPolicy('needs-backtracking', source);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_policy');
    // The column of the construct itself in the YAML line: `(` of the group, `\` of the escape.
    const line = source.split('\n')[2];
    const construct = /\\+1|\(\?<?[=!]/.exec(line)!;
    expect(refused.body.errors).toEqual([
      expect.objectContaining({ policy: 'needs-backtracking', line: 3, column: construct.index + 1, message: expect.stringMatching(message) }),
    ]);
    expect((await call(gateway.url, 'GET', '/admin/policies/needs-backtracking', { adminToken: TEST_ADMIN_TOKEN })).status).toBe(404);
  });
});

describe('match globs', () => {
  it('deny *:admin* whatever the case of the path: GET /proxy/Admin/users is denied', async () => {
    expect([200, 201]).toContain((await putPolicy('no-admin', denyPolicy('no-admin', 'true', '*:admin*'))).status);
    const token = await createAgent();
    for (const path of ['/admin/users', '/Admin/users', '/ADMIN/users', '/%41dmin/users']) {
      const denied = await call(gateway.url, 'GET', `/proxy${path}`, { bearer: token });
      expect([path, denied.status, denied.body.policy]).toEqual([path, 403, 'no-admin']);
    }
    expect((await call(gateway.url, 'GET', '/proxy/public/admin', { bearer: token })).status).toBe(200);
  });
});
