import { call, TestResponse } from './support/http-client';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/** Policies admin API: storage, versions, validation errors with positions, plan limits, tenancy. */

interface PolicyBody {
  name: string;
  description?: string;
  match?: Record<string, string>;
  default?: string;
  rules: Array<{ name?: string; condition: string; action: string; reason: string }>;
  origin: string;
  version: number;
  createdAt: string;
  updatedAt: string;
  source?: string;
}

interface PolicyList {
  version: number;
  policies: PolicyBody[];
}

interface VersionList {
  version: number;
  versions: Array<{ version: number; policy: string; kind: string; actor: string; createdAt: string; source: string | null }>;
}

interface PolicyErrorBody {
  file: string;
  policy?: string;
  rule?: string;
  line: number;
  column: number;
  message: string;
}

interface ErrorBody {
  error: string;
  message: string;
  errors?: PolicyErrorBody[];
  errorCount?: number;
  limit?: number;
  plan?: string;
}

interface ValidationBody {
  valid: boolean;
  policies: string[];
  errors: PolicyErrorBody[];
  errorCount: number;
}

const YAML = { 'content-type': 'application/yaml' };
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** A YAML document from its lines (line 1 is the first argument). */
const doc = (...lines: string[]): string => `${lines.join('\n')}\n`;

/** A one-rule deny policy. */
function denyPolicy(name: string, condition = 'action == "write:x"', reason = 'Denied'): string {
  return doc(`name: ${name}`, 'rules:', `  - condition: ${JSON.stringify(condition)}`, '    action: deny', `    reason: ${reason}`);
}

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startGateway();
});
afterAll(() => gateway.close());

function admin<T = PolicyBody>(org: TestOrganization, method: string, path: string, body?: unknown): Promise<TestResponse<T>> {
  return call<T>(gateway.url, method, path, { adminToken: org.adminToken, body, headers: typeof body === 'string' ? YAML : undefined });
}

async function put(org: TestOrganization, name: string, source: string, status = 201): Promise<PolicyBody> {
  const response = await admin(org, 'PUT', `/admin/policies/${name}`, source);
  expect(response.status).toBe(status);
  return response.body;
}

async function currentVersion(org: TestOrganization): Promise<number> {
  const list = await admin<PolicyList>(org, 'GET', '/admin/policies');
  expect(list.status).toBe(200);
  return list.body.version;
}

describe('PUT /admin/policies/:name', () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createOrganization(gateway, 'enterprise', 'Policies PUT org');
  });

  it('creates a policy from YAML (201), then replaces it (200), keeping the source verbatim', async () => {
    const source = doc(
      '# writes by new agents',
      'name: no-unverified-writes',
      'description: New agents may read, not write.',
      'match: { action: "write:*" }',
      'rules:',
      '  - name: unverified-cannot-write',
      '    condition: agent.trust_tier < verified',
      '    action: deny',
      "    reason: 'Unverified agents cannot write'",
    );
    const created = await admin(org, 'PUT', '/admin/policies/no-unverified-writes', source);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'no-unverified-writes',
      description: 'New agents may read, not write.',
      match: { action: 'write:*' },
      rules: [{ name: 'unverified-cannot-write', condition: 'agent.trust_tier < verified', action: 'deny', reason: 'Unverified agents cannot write' }],
      origin: 'api',
      source,
    });
    expect(created.body.createdAt).toMatch(ISO_MS);
    const firstVersion = created.body.version;

    const replacement = doc('name: no-unverified-writes', 'match: { action: "write:*" }', 'rules:', '  - condition: agent.trust_tier <= verified', '    action: deny', '    reason: Only trusted agents write');
    const replaced = await admin(org, 'PUT', '/admin/policies/no-unverified-writes', replacement);
    expect(replaced.status).toBe(200);
    expect(replaced.body.version).toBe(firstVersion + 1);
    expect(replaced.body.description).toBeUndefined();

    const fetched = await admin(org, 'GET', '/admin/policies/no-unverified-writes');
    expect(fetched.status).toBe(200);
    expect(fetched.body).toMatchObject({
      name: 'no-unverified-writes',
      rules: [{ condition: 'agent.trust_tier <= verified', action: 'deny', reason: 'Only trusted agents write' }],
      origin: 'api',
      version: firstVersion + 1,
      source: replacement,
      createdAt: created.body.createdAt,
    });
    expect(fetched.body.rules[0].name).toBeUndefined();
  });

  it('accepts a JSON body', async () => {
    const definition = {
      name: 'json-policy',
      match: { plugin: 'EmailPlugin', function: 'Send*' },
      default: 'deny',
      rules: [{ name: 'company-mail', condition: 'args.to ends_with "@example.com"', action: 'allow', reason: 'Company mail is fine' }],
    };
    const created = await call<PolicyBody>(gateway.url, 'PUT', '/admin/policies/json-policy', { adminToken: org.adminToken, body: definition });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ ...definition, origin: 'api' });
    expect(JSON.parse(created.body.source!)).toEqual(definition);

    const replaced = await call<PolicyBody>(gateway.url, 'PUT', '/admin/policies/json-policy', { adminToken: org.adminToken, body: { ...definition, default: 'allow' } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.default).toBe('allow');
  });

  it.each([
    ['YAML', denyPolicy('other-name')],
    ['JSON', { name: 'other-name', rules: [{ condition: 'true', action: 'deny', reason: 'r' }] }],
  ])('refuses a %s body whose name differs from the URL with 400 and stores nothing', async (_kind, body) => {
    const response = await admin<ErrorBody>(org, 'PUT', '/admin/policies/url-name', body);
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_request');
    expect(response.body.message).toContain('other-name');
    expect(response.body.message).toContain('url-name');
    expect((await admin(org, 'GET', '/admin/policies/url-name')).status).toBe(404);
    expect((await admin(org, 'GET', '/admin/policies/other-name')).status).toBe(404);
  });

  it('refuses an empty body with an error, not a stored policy', async () => {
    const response = await admin<ErrorBody>(org, 'PUT', '/admin/policies/empty', '   ');
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
    expect(typeof response.body.error).toBe('string');
    expect((await admin(org, 'GET', '/admin/policies/empty')).status).toBe(404);
  });
});

describe('a policy named like a route', () => {
  it.each(['versions', 'Versions', 'VERSIONS'])('refuses %s, which GET could never read back (it is the change history)', async (name) => {
    const org = await createOrganization(gateway, 'enterprise', `Reserved name org ${name}`);
    const response = await admin<ErrorBody>(org, 'PUT', `/admin/policies/${name}`, denyPolicy(name, 'args.x == "y"', 'r'));
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: 'invalid_request', message: expect.stringContaining('reserved') });
    expect(await currentVersion(org)).toBe(0);
  });
});

describe('GET and DELETE /admin/policies', () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createOrganization(gateway, 'enterprise', 'Policies list org');
  });

  it('lists the policies in creation order with the current version; a replace keeps the position', async () => {
    expect(await admin<PolicyList>(org, 'GET', '/admin/policies')).toMatchObject({ status: 200, body: { version: 0, policies: [] } });
    await put(org, 'zeta', denyPolicy('zeta'));
    await put(org, 'alpha', denyPolicy('alpha'));
    await put(org, 'mid', denyPolicy('mid'));
    await put(org, 'zeta', denyPolicy('zeta', 'action == "write:y"'), 200);

    const list = await admin<PolicyList>(org, 'GET', '/admin/policies');
    expect(list.status).toBe(200);
    expect(list.body.version).toBe(4);
    expect(list.body.policies.map((policy) => [policy.name, policy.version])).toEqual([
      ['zeta', 4],
      ['alpha', 2],
      ['mid', 3],
    ]);
    expect(list.body.policies[0]).toMatchObject({ origin: 'api', rules: [{ condition: 'action == "write:y"', action: 'deny', reason: 'Denied' }] });
    expect(list.body.policies[0].source).toBeUndefined();
  });

  it('answers 404 not_found for an unknown name', async () => {
    for (const method of ['GET', 'DELETE']) {
      const response = await admin<ErrorBody>(org, method, '/admin/policies/no-such-policy');
      expect(response.status).toBe(404);
      expect(response.body.error).toBe('not_found');
      expect(response.body.message).toContain('no-such-policy');
    }
  });

  it('deletes a policy with a new version; afterwards it is gone', async () => {
    await put(org, 'short-lived', denyPolicy('short-lived'));
    const before = await currentVersion(org);
    const deleted = await admin<{ version: number }>(org, 'DELETE', '/admin/policies/short-lived');
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ version: before + 1 });
    expect(await currentVersion(org)).toBe(before + 1);
    expect((await admin(org, 'GET', '/admin/policies/short-lived')).status).toBe(404);
    expect((await admin(org, 'DELETE', '/admin/policies/short-lived')).status).toBe(404);
    const list = await admin<PolicyList>(org, 'GET', '/admin/policies');
    expect(list.body.policies.map((policy) => policy.name)).not.toContain('short-lived');
    expect(await currentVersion(org)).toBe(before + 1);
  });
});

describe('policy list consistency', () => {
  it('answers each list as one snapshot: its version matches the policies listed', async () => {
    const org = await createOrganization(gateway, 'enterprise', 'Policies snapshot org');
    const lists: PolicyList[] = [];
    let writing = true;
    const read = async (): Promise<void> => {
      while (writing) {
        const response = await admin<PolicyList>(org, 'GET', '/admin/policies');
        expect(response.status).toBe(200);
        lists.push(response.body);
      }
    };
    const readers = [read(), read(), read()];
    for (let i = 1; i <= 12; i++) await put(org, `s${i}`, denyPolicy(`s${i}`));
    writing = false;
    await Promise.all(readers);
    expect(lists.length).toBeGreaterThan(12);
    // Version v of this organization is the creation of s1..sv, so a consistent list at v names exactly those.
    const torn = lists.filter((list) => list.policies.map((policy) => policy.name).join(',') !== Array.from({ length: list.version }, (_, i) => `s${i + 1}`).join(','));
    expect(torn.map((list) => ({ version: list.version, names: list.policies.map((policy) => policy.name) }))).toEqual([]);
  });
});

describe('policy versions', () => {
  it('records every change, newest first, with its kind and actor; versions are per organization', async () => {
    const orgA = await createOrganization(gateway, 'enterprise', 'Versions org A');
    const orgB = await createOrganization(gateway, 'enterprise', 'Versions org B');

    const sourceA1 = denyPolicy('first');
    await put(orgA, 'first', sourceA1);
    await put(orgB, 'only-b', denyPolicy('only-b'));
    const sourceA2 = denyPolicy('second');
    await put(orgA, 'second', sourceA2);
    const sourceA3 = denyPolicy('first', 'action == "delete:x"');
    await put(orgA, 'first', sourceA3, 200);
    expect((await admin(orgA, 'DELETE', '/admin/policies/second')).body).toEqual({ version: 4 });

    const historyA = await admin<VersionList>(orgA, 'GET', '/admin/policies/versions');
    expect(historyA.status).toBe(200);
    expect(historyA.body.version).toBe(4);
    expect(historyA.body.versions.map(({ version, policy, kind, source }) => ({ version, policy, kind, source }))).toEqual([
      { version: 4, policy: 'second', kind: 'deleted', source: null },
      { version: 3, policy: 'first', kind: 'updated', source: sourceA3 },
      { version: 2, policy: 'second', kind: 'created', source: sourceA2 },
      { version: 1, policy: 'first', kind: 'created', source: sourceA1 },
    ]);
    const actors = new Set(historyA.body.versions.map((entry) => entry.actor));
    expect(actors.size).toBe(1);
    expect([...actors][0]).toMatch(/^atk_/);
    for (const entry of historyA.body.versions) expect(entry.createdAt).toMatch(ISO_MS);

    const limited = await admin<VersionList>(orgA, 'GET', '/admin/policies/versions?limit=2');
    expect(limited.body.versions.map((entry) => entry.version)).toEqual([4, 3]);

    const historyB = await admin<VersionList>(orgB, 'GET', '/admin/policies/versions');
    expect(historyB.body).toMatchObject({ version: 1, versions: [{ version: 1, policy: 'only-b', kind: 'created' }] });
    expect(historyB.body.versions).toHaveLength(1);
    expect(historyB.body.versions[0].actor).not.toBe([...actors][0]);
  });

  it('does not make a version for the same text sent again (decision caches stay valid)', async () => {
    const org = await createOrganization(gateway, 'enterprise', 'Versions unchanged org');
    await put(org, 'same', denyPolicy('same'));
    const again = await admin<{ version: number }>(org, 'PUT', '/admin/policies/same', denyPolicy('same'));
    expect(again.status).toBe(200);
    expect(again.body.version).toBe(1);
    expect((await admin(org, 'PUT', '/admin/policies/same', denyPolicy('same', 'action == "write:y"'))).body.version).toBe(2);
    const history = await admin<VersionList>(org, 'GET', '/admin/policies/versions');
    expect(history.body.version).toBe(2);
    expect(history.body.versions.map((version) => version.kind)).toEqual(['updated', 'created']);
  });

  it('does not make a version for a refused change', async () => {
    const org = await createOrganization(gateway, 'enterprise', 'Versions refused org');
    await put(org, 'kept', denyPolicy('kept'));
    expect((await admin(org, 'PUT', '/admin/policies/kept', denyPolicy('kept', 'foo == 1'))).status).toBe(400);
    expect((await admin(org, 'PUT', '/admin/policies/kept', denyPolicy('not-kept'))).status).toBe(400);
    expect((await admin(org, 'DELETE', '/admin/policies/missing')).status).toBe(404);
    const history = await admin<VersionList>(org, 'GET', '/admin/policies/versions');
    expect(history.body.version).toBe(1);
    expect(history.body.versions).toHaveLength(1);
    expect((await admin(org, 'GET', '/admin/policies/kept')).body.source).toBe(denyPolicy('kept'));
  });
});

/** An expected error: position and owner exact, message exact or matched. */
type ExpectedError = Omit<Partial<PolicyErrorBody>, 'message'> & { message: RegExp | string };

/** [what is wrong, the document (name p), the errors expected, in source order]. */
const INVALID: Array<[string, string, ExpectedError[]]> = [
  [
    'a YAML syntax error (nested mapping in a compact value)',
    doc('name: p', 'rules:', '  - condition: action == "x"', '    action: deny', '    reason: a: b'),
    [{ line: 5, column: 13, message: /YAML syntax error/ }],
  ],
  ['a YAML syntax error (tab indentation)', doc('name: p', 'rules:', '\t- condition: action == "x"'), [{ line: 3, column: 1, message: /YAML syntax error/ }]],
  [
    'an unknown variable root',
    doc('name: p', 'rules:', '  - condition: foo.bar == 1', '    action: deny', '    reason: r'),
    [{ policy: 'p', rule: 'p#0', line: 3, column: 16, message: /unknown variable 'foo'/ }],
  ],
  [
    'an unknown variable inside a quoted condition',
    doc('name: p', 'rules:', `  - condition: "action == 'x' and foo == 1"`, '    action: deny', '    reason: r'),
    [{ policy: 'p', rule: 'p#0', line: 3, column: 35, message: /unknown variable 'foo'/ }],
  ],
  [
    'an unknown agent field on the second line of a folded condition',
    doc('name: p', 'rules:', '  - condition: >-', '      action == "x" or', '      agent.tier == "y"', '    action: deny', '    reason: r'),
    [{ policy: 'p', rule: 'p#0', line: 5, column: 13, message: /unknown agent field 'tier'/ }],
  ],
  [
    'an unknown agent field',
    doc('name: p', 'rules:', '  - condition: agent.tier == "x"', '    action: deny', '    reason: r'),
    [{ policy: 'p', rule: 'p#0', line: 3, column: 22, message: /unknown agent field 'tier'/ }],
  ],
  [
    'an unknown operator',
    doc('name: p', 'rules:', '  - condition: action like "x"', '    action: deny', '    reason: r'),
    [{ policy: 'p', rule: 'p#0', line: 3, column: 23, message: /unknown operator 'like'/ }],
  ],
  [
    'an unknown token',
    doc('name: p', 'rules:', '  - condition: action ~ "x"', '    action: deny', '    reason: r'),
    [{ policy: 'p', rule: 'p#0', line: 3, column: 23, message: /unexpected character "~"/ }],
  ],
  [
    'rate_limit with 2 arguments',
    doc('name: p', 'rules:', '  - condition: rate_limit(per_agent, 10)', '    action: deny', '    reason: r'),
    [{ policy: 'p', rule: 'p#0', line: 3, column: 16, message: /rate_limit\(\) takes 3 arguments.*got 2/ }],
  ],
  [
    'a bad rate_limit window',
    doc('name: p', 'rules:', '  - condition: rate_limit(per_agent, 10, 5x)', '    action: deny', '    reason: r'),
    [{ policy: 'p', rule: 'p#0', line: 3, column: 42, message: /bad rate_limit window/ }],
  ],
  [
    'a regular expression RE2 cannot match (a backreference)',
    doc('name: p', 'rules:', '  - condition: args.q matches "(a)\\\\1"', '    action: deny', '    reason: r'),
    [{ policy: 'p', rule: 'p#0', line: 3, column: 35, message: /unsafe or invalid regular expression: backreference \\1 at offset 3 is not supported/ }],
  ],
  [
    'a missing reason',
    doc('name: p', 'rules:', '  - name: r1', '    condition: action == "x"', '    action: deny'),
    [{ policy: 'p', rule: 'r1', line: 3, column: 5, message: "missing required field 'reason'" }],
  ],
  [
    'an unknown key in a rule',
    doc('name: p', 'rules:', '  - condition: action == "x"', '    action: deny', '    reason: r', '    severity: high'),
    [{ policy: 'p', rule: 'p#0', line: 6, column: 5, message: /unknown key 'severity'/ }],
  ],
  [
    'an unknown key in the policy',
    doc('name: p', 'priority: 1', 'rules:', '  - condition: action == "x"', '    action: deny', '    reason: r'),
    [{ policy: 'p', line: 2, column: 1, message: /unknown key 'priority'/ }],
  ],
  [
    'three problems in three rules',
    doc(
      'name: p',
      'match: { action: "write:*" }',
      'rules:',
      '  - name: a',
      '    condition: foo == 1',
      '    action: deny',
      '    reason: r',
      '  - name: b',
      '    condition: rate_limit(per_agent, 10, 5x)',
      '    action: deny',
      '    reason: r',
      '  - name: c',
      '    condition: action == "x"',
      '    action: block',
      '    reason: r',
    ),
    [
      { policy: 'p', rule: 'a', line: 5, column: 16, message: /unknown variable 'foo'/ },
      { policy: 'p', rule: 'b', line: 9, column: 42, message: /bad rate_limit window/ },
      { policy: 'p', rule: 'c', line: 14, column: 13, message: /'action' must be 'allow', 'deny', 'alert', 'require_approval' or 'label'/ },
    ],
  ],
];

function expectedErrors(errors: ExpectedError[]) {
  return errors.map(({ message, ...rest }) => ({ file: expect.any(String), ...rest, message: typeof message === 'string' ? message : expect.stringMatching(message) }));
}

describe('invalid policies', () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createOrganization(gateway, 'enterprise', 'Invalid policies org');
  });

  it.each(INVALID)('PUT answers 400 invalid_policy for %s, with every error positioned', async (_what, source, errors) => {
    const response = await admin<ErrorBody>(org, 'PUT', '/admin/policies/p', source);
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_policy');
    expect(response.body.errors).toEqual(expectedErrors(errors));
    expect(response.body.message).toContain(`line ${errors[0].line}, column ${errors[0].column}`);
    if (errors.length > 1) expect(response.body.message).toContain(`${errors.length - 1} more`);
    expect((await admin(org, 'GET', '/admin/policies/p')).status).toBe(404);
  });

  it.each(INVALID)('validate answers 200 {valid:false} for %s, with the same errors', async (_what, source, errors) => {
    const response = await admin<ValidationBody>(org, 'POST', '/admin/policies/validate', source);
    expect(response.status).toBe(200);
    expect(response.body.valid).toBe(false);
    expect(response.body.errors).toEqual(expectedErrors(errors));
  });

  it('leaves the organization without policies or versions', async () => {
    expect(await admin<PolicyList>(org, 'GET', '/admin/policies')).toMatchObject({ status: 200, body: { version: 0, policies: [] } });
  });
});

/** A JSON body sent as text, exactly as given. */
function sendJson<T>(org: TestOrganization, method: string, path: string, text: string, contentType = 'application/json'): Promise<TestResponse<T>> {
  return call<T>(gateway.url, method, path, { adminToken: org.adminToken, body: text, headers: { 'content-type': contentType } });
}

describe('JSON bodies: errors positioned in the text sent', () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createOrganization(gateway, 'enterprise', 'JSON positions org');
  });

  // One line, as most clients send JSON: every error is on line 1.
  const COMPACT = '{"name":"p","rules":[{"condition":"action == \\"x\\" and foo == 1","action":"deny","reason":"r","level":2}]}';

  it('PUT points at the column of the one-line body, not at a re-serialised form', async () => {
    const response = await sendJson<ErrorBody>(org, 'PUT', '/admin/policies/p', COMPACT);
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_policy');
    expect(response.body.errors).toEqual(
      expectedErrors([
        { policy: 'p', rule: 'p#0', line: 1, column: 56, message: /unknown variable 'foo'/ },
        { policy: 'p', rule: 'p#0', line: 1, column: 95, message: /unknown key 'level' in rule/ },
      ]),
    );
    expect(COMPACT.slice(55, 58)).toBe('foo');
    expect(COMPACT.slice(94, 101)).toBe('"level"');
  });

  it('validate points into a tab-indented policies file as it was laid out', async () => {
    const text = '{\n\t"policies": [\n\t\t{\n\t\t\t"name": "p",\n\t\t\t"rules": [{"condition": "agent.tier == 1", "action": "block", "reason": "r"}]\n\t\t}\n\t]\n}\n';
    const response = await sendJson<ValidationBody>(org, 'POST', '/admin/policies/validate', text);
    expect(response.status).toBe(200);
    expect(response.body.errors).toEqual(
      expectedErrors([
        { policy: 'p', rule: 'p#0', line: 5, column: 35, message: /unknown agent field 'tier'/ },
        { policy: 'p', rule: 'p#0', line: 5, column: 57, message: /'action' must be 'allow', 'deny', 'alert', 'require_approval' or 'label'/ },
      ]),
    );
  });

  it('refuses a duplicate key (which JSON.parse would silently drop) at the second key', async () => {
    const text = '{"name":"p","rules":[],"rules":[{"condition":"true","action":"deny","reason":"r"}]}';
    const response = await sendJson<ErrorBody>(org, 'PUT', '/admin/policies/p', text);
    expect(response.status).toBe(400);
    expect(response.body.errors).toEqual(expectedErrors([{ line: 1, column: 24, message: /keys must be unique/ }]));
  });

  it('stores the JSON text as sent', async () => {
    const text = '{"name": "kept-json", "rules": [{"condition": "true", "action": "deny", "reason": "r"}]}';
    expect((await sendJson(org, 'PUT', '/admin/policies/kept-json', text)).status).toBe(201);
    expect((await admin(org, 'GET', '/admin/policies/kept-json')).body.source).toBe(text);
  });

  it('validates a body of tens of thousands of keys in time that grows with its size, not its square', async () => {
    const body = (keys: number) => `{"name":"p","rules":[],${Array.from({ length: keys }, (_, i) => `"k${i}":1`).join(',')}}`;
    /** The fastest of two validations of a body of `keys` keys, in ms, with the last answer. */
    const timed = async (keys: number) => {
      const text = body(keys);
      let fastest = Infinity;
      let response!: TestResponse<ValidationBody>;
      for (let round = 0; round < 2; round++) {
        const started = performance.now();
        response = await sendJson<ValidationBody>(org, 'POST', '/admin/policies/validate', text);
        fastest = Math.min(fastest, performance.now() - started);
      }
      return { ms: fastest, response };
    };
    const small = await timed(6_000);
    const large = await timed(60_000);
    // Telling a policies file from one policy parsed the body with yaml's quadratic duplicate-key
    // check: ten times the keys took a hundred times as long (90,000 keys held the gateway for
    // 25 s). Linear work takes about ten times as long; a ratio, as the machine's speed varies.
    expect(large.ms / small.ms).toBeLessThan(40);
    expect(large.response.status).toBe(200);
    expect(large.response.body.errorCount).toBe(60_000);
    expect(large.response.body.errors).toHaveLength(100);
    expect(large.response.body.errors[0]).toMatchObject({ line: 1, column: 24, message: expect.stringMatching(/unknown key 'k0' in policy/) });
  });

  it.each([
    ['an empty JSON body', 'application/json', '', 400, 'invalid_request', /^The request body is empty/],
    ['an empty YAML body', 'application/yaml', '  \n', 400, 'invalid_request', /^The request body is empty/],
    ['the JSON object {}', 'application/json', '{}', 400, 'invalid_policy', /^missing required field 'name'/],
    ['a JSON list', 'application/json', '[]', 400, 'invalid_policy', /^a policy must be a mapping with name and rules/],
    ['plain text', 'text/plain', 'name: p', 415, 'unsupported_media_type', /application\/json or application\/yaml/],
  ])('PUT answers %s with what is wrong', async (_what, contentType, text, status, error, message) => {
    const response = await sendJson<ErrorBody>(org, 'PUT', '/admin/policies/p', text, contentType);
    expect(response.status).toBe(status);
    expect(response.body.error).toBe(error);
    expect(response.body.message).toMatch(message);
  });

  it('refuses JSON in a charset other than UTF-8 with 415, as RFC 8259 asks', async () => {
    const response = await call<ErrorBody>(gateway.url, 'POST', '/admin/policies/validate', {
      adminToken: org.adminToken,
      body: Buffer.from('{"name":"p","rules":[]}', 'utf16le'),
      headers: { 'content-type': 'application/json; charset=utf-16le' },
    });
    expect(response.status).toBe(415);
    expect(response.body.error).toBe('unsupported_media_type');
    expect(response.body.message).toMatch(/UTF-8/);
  });
});

describe('bodies built to be expensive', () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createOrganization(gateway, 'enterprise', 'Expensive bodies org');
  });

  it('refuses a body nested deeper than 64 levels at once, naming the problem and where it starts', async () => {
    // 1 MiB of `{` took 1.5 s and 600 MB in the parser and answered "Maximum call stack size exceeded".
    const text = `name: p\nrules: []\nmatch: ${'{'.repeat(1_000_000)}`;
    for (const path of ['/admin/policies/p', '/admin/policies/validate']) {
      const response = await call<ErrorBody & ValidationBody>(gateway.url, path.endsWith('validate') ? 'POST' : 'PUT', path, {
        adminToken: org.adminToken,
        body: text,
        headers: { 'content-type': 'application/yaml' },
      });
      expect(response.status).toBe(path.endsWith('validate') ? 200 : 400);
      expect(response.body.errors).toEqual(expectedErrors([{ line: 3, column: 70, message: /^YAML nested more than 64 levels deep$/ }]));
    }
  });

  it('lists the first 100 errors of a body of thousands, in source order, and counts them all', async () => {
    const text = `${'&a '.repeat(5_000)}x`;
    const put = await call<ErrorBody>(gateway.url, 'PUT', '/admin/policies/p', { adminToken: org.adminToken, body: text, headers: { 'content-type': 'application/yaml' } });
    expect(put.status).toBe(400);
    expect(put.body.error).toBe('invalid_policy');
    expect(put.body.message).toBe('YAML syntax error: A node can have at most one anchor (line 1, column 4), and 4998 more');
    expect(put.body.errorCount).toBe(4_999);
    expect(put.body.errors).toHaveLength(100);
    expect(put.body.errors?.[99]).toMatchObject({ line: 1, column: 301 });
    const validate = await call<ValidationBody>(gateway.url, 'POST', '/admin/policies/validate', { adminToken: org.adminToken, body: text, headers: { 'content-type': 'application/yaml' } });
    expect(validate.body).toMatchObject({ valid: false, errorCount: 4_999 });
    const withoutFile = (errors: PolicyErrorBody[] = []) => errors.map(({ file: _file, ...error }) => error);
    expect(withoutFile(validate.body.errors)).toEqual(withoutFile(put.body.errors));
  });

  it('counts no errors in a valid body', async () => {
    const response = await admin<ValidationBody>(org, 'POST', '/admin/policies/validate', denyPolicy('fine'));
    expect(response.body).toMatchObject({ valid: true, errors: [], errorCount: 0 });
  });
});

describe('POST /admin/policies/validate', () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createOrganization(gateway, 'enterprise', 'Validate org');
  });

  it('accepts a valid policy (YAML or JSON) without storing it', async () => {
    const yaml = await admin<ValidationBody>(org, 'POST', '/admin/policies/validate', denyPolicy('candidate'));
    expect(yaml.status).toBe(200);
    expect(yaml.body).toEqual({ valid: true, policies: ['candidate'], errors: [], errorCount: 0 });
    const json = await admin<ValidationBody>(org, 'POST', '/admin/policies/validate', { name: 'candidate-json', rules: [{ condition: 'agent.trust_tier < trusted', action: 'deny', reason: 'r' }] });
    expect(json.status).toBe(200);
    expect(json.body).toEqual({ valid: true, policies: ['candidate-json'], errors: [], errorCount: 0 });
    expect((await admin(org, 'GET', '/admin/policies/candidate')).status).toBe(404);
    expect(await currentVersion(org)).toBe(0);
  });

  it('accepts a whole policies file and names its policies in order', async () => {
    const file = doc(
      'policies:',
      '  - name: reads',
      '    match: { action: "read:*" }',
      '    rules:',
      '      - condition: args.path starts_with "/etc"',
      '        action: deny',
      '        reason: System files',
      '  - name: writes',
      '    rules:',
      '      - condition: rate_limit(per_agent, 10, 1m)',
      '        action: deny',
      '        reason: Too many',
    );
    const response = await admin<ValidationBody>(org, 'POST', '/admin/policies/validate', file);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ valid: true, policies: ['reads', 'writes'], errors: [], errorCount: 0 });
  });

  it('reports duplicate policy names in a file at the second name', async () => {
    const file = doc(
      'policies:',
      '  - name: dup',
      '    rules:',
      '      - condition: action == "x"',
      '        action: deny',
      '        reason: r',
      '  - name: dup',
      '    rules:',
      '      - condition: action == "y"',
      '        action: deny',
      '        reason: r',
    );
    const response = await admin<ValidationBody>(org, 'POST', '/admin/policies/validate', file);
    expect(response.status).toBe(200);
    expect(response.body.valid).toBe(false);
    expect(response.body.errors).toEqual([{ file: expect.any(String), policy: 'dup', line: 7, column: 11, message: expect.stringMatching(/duplicate policy name 'dup'.*line 2/) }]);
  });

  it('reports the errors of every policy in a file', async () => {
    const file = doc(
      'policies:',
      '  - name: one',
      '    rules:',
      '      - condition: agent.level > 2',
      '        action: deny',
      '        reason: r',
      '  - name: two',
      '    rules:',
      '      - condition: action == "x"',
      '        action: deny',
      '  - name: three',
      '    rules:',
      '      - condition: rate_limit(per_agent, 0, 1m)',
      '        action: deny',
      '        reason: r',
    );
    const response = await admin<ValidationBody>(org, 'POST', '/admin/policies/validate', file);
    expect(response.status).toBe(200);
    expect(response.body.valid).toBe(false);
    expect(response.body.errors).toEqual(
      expectedErrors([
        { policy: 'one', rule: 'one#0', line: 4, column: 26, message: /unknown agent field 'level'/ },
        { policy: 'two', rule: 'two#0', line: 9, column: 9, message: "missing required field 'reason'" },
        { policy: 'three', rule: 'three#0', line: 13, column: 42, message: /bad rate_limit count/ },
      ]),
    );
  });
});

describe('plan limits', () => {
  it('refuses the 4th policy of a free organization with 403, while replacing still works', async () => {
    const org = await createOrganization(gateway, 'free', 'Free policies org');
    for (const name of ['p1', 'p2', 'p3']) await put(org, name, denyPolicy(name));
    const refused = await admin<ErrorBody>(org, 'PUT', '/admin/policies/p4', denyPolicy('p4'));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: 'plan_limit_exceeded', limit: 3, plan: 'free' });
    expect(typeof refused.body.message).toBe('string');
    expect((await admin(org, 'GET', '/admin/policies/p4')).status).toBe(404);
    expect(await currentVersion(org)).toBe(3);

    const replaced = await put(org, 'p2', denyPolicy('p2', 'action == "write:other"'), 200);
    expect(replaced.version).toBe(4);

    expect((await admin(org, 'DELETE', '/admin/policies/p1')).status).toBe(200);
    await put(org, 'p4', denyPolicy('p4'));
    const list = await admin<PolicyList>(org, 'GET', '/admin/policies');
    expect(list.body.policies.map((policy) => policy.name)).toEqual(['p2', 'p3', 'p4']);
  });
});

describe('authentication', () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createOrganization(gateway, 'enterprise', 'Policies auth org');
    await put(org, 'guarded', denyPolicy('guarded'));
  });

  it.each([
    ['GET', '/admin/policies'],
    ['GET', '/admin/policies/guarded'],
    ['GET', '/admin/policies/versions'],
    ['PUT', '/admin/policies/guarded'],
    ['DELETE', '/admin/policies/guarded'],
    ['POST', '/admin/policies/validate'],
  ])('%s %s answers 401 without or with a wrong admin token', async (method, path) => {
    const body = method === 'PUT' || method === 'POST' ? denyPolicy('guarded') : undefined;
    const headers = body === undefined ? undefined : YAML;
    const missing = await call<ErrorBody>(gateway.url, method, path, { body, headers });
    expect(missing.status).toBe(401);
    expect(missing.body.error).toBe('unauthorized');
    const wrong = await call<ErrorBody>(gateway.url, method, path, { adminToken: `${org.adminToken}x`, body, headers });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('unauthorized');
    const stored = await admin(org, 'GET', '/admin/policies/guarded');
    expect(stored).toMatchObject({ status: 200, body: { version: 1, source: denyPolicy('guarded') } });
  });
});

describe('tenant scoping', () => {
  it('hides one organization’s policies from another', async () => {
    const orgA = await createOrganization(gateway, 'enterprise', 'Scoped org A');
    const orgB = await createOrganization(gateway, 'enterprise', 'Scoped org B');
    const sourceA = denyPolicy('shared-name', 'action == "write:a"');
    await put(orgA, 'shared-name', sourceA);

    expect((await admin(orgB, 'GET', '/admin/policies/shared-name')).status).toBe(404);
    expect((await admin(orgB, 'DELETE', '/admin/policies/shared-name')).status).toBe(404);
    expect(await admin<PolicyList>(orgB, 'GET', '/admin/policies')).toMatchObject({ status: 200, body: { version: 0, policies: [] } });
    expect((await admin<VersionList>(orgB, 'GET', '/admin/policies/versions')).body.versions).toEqual([]);

    const ownB = await put(orgB, 'shared-name', denyPolicy('shared-name', 'action == "write:b"'));
    expect(ownB.version).toBe(1);
    const stillA = await admin(orgA, 'GET', '/admin/policies/shared-name');
    expect(stillA.status).toBe(200);
    expect(stillA.body).toMatchObject({ source: sourceA, version: 1 });
  });
});
