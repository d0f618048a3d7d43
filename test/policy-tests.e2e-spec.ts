import { call, TestResponse } from './support/http-client';
import { auditEntries } from './support/org-fixtures';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/** Stored policy tests: a policy change that fails them is refused, naming them, unless forced (audited). */

interface Failure {
  suite: string;
  test: string;
  line: number;
  column: number;
  failure: string;
}

const YAML = { 'content-type': 'application/yaml' };

const REFUNDS = `name: refunds
match: { action: "write:refunds*" }
rules:
  - name: large-refunds
    condition: args.amount > 1000
    action: deny
    reason: Refunds over 1000 need a person
`;

/** The same policy with the limit raised tenfold: the change a test must catch. */
const LOOSE_REFUNDS = REFUNDS.replace('args.amount > 1000', 'args.amount > 10000');

const TESTS = `tests:
  - name: small refunds pass
    input: { action: write:refunds, args: { amount: 5 } }
    expect: { decision: allow }
  - name: large refunds are denied
    input: { action: write:refunds, args: { amount: 5000 } }
    expect: { decision: deny, policy: refunds, rule: large-refunds }
`;

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startGateway();
});
afterAll(() => gateway.close());

function admin<T = Record<string, unknown>>(org: TestOrganization, method: string, path: string, body?: string): Promise<TestResponse<T>> {
  return call<T>(gateway.url, method, path, { adminToken: org.adminToken, body, headers: body === undefined ? undefined : YAML });
}

async function orgWithTests(): Promise<TestOrganization> {
  const org = await createOrganization(gateway);
  expect((await admin(org, 'PUT', '/admin/policies/refunds', REFUNDS)).status).toBe(201);
  expect((await admin(org, 'PUT', '/admin/policy-tests/refunds', TESTS)).status).toBe(201);
  return org;
}

describe('stored policy tests', () => {
  it('refuse a change that fails them with 409, naming the test, where it is and what decided instead', async () => {
    const org = await orgWithTests();
    const refused = await admin<{ error: string; message: string; failures: Failure[] }>(org, 'PUT', '/admin/policies/refunds', LOOSE_REFUNDS);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('policy_tests_failed');
    expect(refused.body.message).toContain('refunds: large refunds are denied');
    expect(refused.body.failures).toEqual([
      { suite: 'refunds', test: 'large refunds are denied', line: 5, column: 5, failure: 'expected deny, expected rule large-refunds; got allow by policy refunds, rule (none): allowed' },
    ]);
    const current = await admin<{ source: string; version: number }>(org, 'GET', '/admin/policies/refunds');
    expect(current.body.source).toBe(REFUNDS);
  });

  it('let a change that passes them through', async () => {
    const org = await orgWithTests();
    const stricter = REFUNDS.replace('args.amount > 1000', 'args.amount > 500');
    expect((await admin(org, 'PUT', '/admin/policies/refunds', stricter)).status).toBe(200);
  });

  it('refuse a deletion that fails them, too', async () => {
    const org = await orgWithTests();
    const refused = await admin<{ error: string }>(org, 'DELETE', '/admin/policies/refunds');
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('policy_tests_failed');
    expect((await admin(org, 'GET', '/admin/policies/refunds')).status).toBe(200);
  });

  it('give way to force=true, and the audit trail records the change as forced with the failed tests', async () => {
    const org = await orgWithTests();
    const forced = await admin<{ version: number; source: string }>(org, 'PUT', '/admin/policies/refunds?force=true', LOOSE_REFUNDS);
    expect(forced.status).toBe(200);
    expect(forced.body.source).toBe(LOOSE_REFUNDS);
    const [entry] = await auditEntries(gateway, org, 'action=admin:policy.update', 1);
    expect(entry.details).toMatchObject({
      policy: 'refunds',
      forced: true,
      failedTests: [{ suite: 'refunds', test: 'large refunds are denied', failure: expect.stringContaining('got allow') }],
    });
    const run = await admin<{ tests: number; passed: number; failures: Failure[] }>(org, 'POST', '/admin/policy-tests/run');
    expect(run.body).toMatchObject({ tests: 2, passed: 1, failures: [{ test: 'large refunds are denied' }] });
  });

  it('are not stored when they fail against the policies in force (unless forced)', async () => {
    const org = await createOrganization(gateway);
    expect((await admin(org, 'PUT', '/admin/policies/refunds', LOOSE_REFUNDS)).status).toBe(201);
    const refused = await admin<{ error: string; failures: Failure[] }>(org, 'PUT', '/admin/policy-tests/refunds', TESTS);
    expect(refused.status).toBe(409);
    expect(refused.body.failures.map((failure) => failure.test)).toEqual(['large refunds are denied']);
    expect((await admin(org, 'GET', '/admin/policy-tests/refunds')).status).toBe(404);
    expect((await admin(org, 'PUT', '/admin/policy-tests/refunds?force=true', TESTS)).status).toBe(201);
  });

  it('report a malformed test file with its line and column (400), and refuse a policies key', async () => {
    const org = await createOrganization(gateway);
    const bad = await admin<{ error: string; errors: Array<{ line: number; column: number; message: string }> }>(
      org,
      'PUT',
      '/admin/policy-tests/bad',
      'tests:\n  - name: x\n    input: { acton: read:x }\n    expect: { decision: allow }\n',
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid_policy');
    expect(bad.body.errors[0]).toMatchObject({ line: 3, column: 14, message: expect.stringContaining("unknown key 'acton'") });
    const named = await admin<{ message: string }>(org, 'PUT', '/admin/policy-tests/named', `policies: [a.yaml]\n${TESTS}`);
    expect(named.status).toBe(400);
    expect(named.body.message).toContain("remove 'policies'");
  });

  it('belong to their organization: another one’s changes are not held by them', async () => {
    await orgWithTests();
    const other = await createOrganization(gateway);
    expect((await admin(other, 'PUT', '/admin/policies/refunds', LOOSE_REFUNDS)).status).toBe(201);
    expect((await admin<{ files: unknown[] }>(other, 'GET', '/admin/policy-tests')).body.files).toEqual([]);
  });
});
