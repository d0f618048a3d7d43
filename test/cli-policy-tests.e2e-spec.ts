import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** `ags policy test <dir>`: test files run against policy files by the engine alone, as CI runs them. */

const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'dist', 'src', 'cli', 'main.js');
const FIXTURES = 'test/fixtures/policy-tests';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI from the project root with no database configured. */
function run(file: string, args: string[], input?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(file, args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '' }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

const ags = (...args: string[]) => run(process.execPath, [CLI, ...args]);

/** The JUnit report as junit2json (a JUnit XML reader CI tooling uses) reads it. */
async function readJunit(file: string): Promise<Record<string, unknown>> {
  const script = "import { parse } from 'junit2json'; import fs from 'node:fs'; const xml = fs.readFileSync(0, 'utf8'); console.log(JSON.stringify(await parse(xml)));";
  const parsed = await run(process.execPath, ['--input-type=module', '-e', script], fs.readFileSync(file, 'utf8'));
  if (parsed.code !== 0) throw new Error(`junit2json could not read the report: ${parsed.stderr}`);
  return JSON.parse(parsed.stdout) as Record<string, unknown>;
}

let scratch: string;

beforeAll(() => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ags-policy-test-'));
});

afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

describe('ags policy test', () => {
  it('passes the demo policies’ own tests (config/policies.test.yaml): exit 0', async () => {
    const result = await ags('policy', 'test', 'config');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^PASS config\/policies\.test\.yaml:4:5 system files are blocked$/m);
    expect(result.stdout).toMatch(/^(\d+) tests, \1 passed, 0 failed \(1 file\)$/m);
  });

  it('passes a directory whose tests hold, approvals included: exit 0', async () => {
    const result = await ags('policy', 'test', `${FIXTURES}/passing`);
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n').filter((line) => line.startsWith('PASS '))).toHaveLength(3);
    expect(result.stdout).toContain('3 tests, 3 passed, 0 failed (1 file)');
  });

  it('prints each failure with where the test is and the rule that decided instead: exit 1', async () => {
    const file = `${FIXTURES}/failing/refunds.test.yaml`;
    const result = await ags('policy', 'test', `${FIXTURES}/failing`);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`PASS ${file}:2:5 small refunds pass`);
    expect(result.stdout).toContain(`FAIL ${file}:5:5 trusted agents refund anything: expected allow; got deny by policy refunds, rule large-refunds: Refunds over 1000 need a privileged agent`);
    expect(result.stdout).toContain(`FAIL ${file}:8:5 refunds & <markup> are escaped: expected deny; got require_approval by policy refunds, rule huge-refunds`);
    expect(result.stdout).toContain('3 tests, 1 passed, 2 failed (1 file)');
  });

  it('writes JUnit XML that a JUnit reader reads: suites, cases and failures', async () => {
    const report = path.join(scratch, 'junit.xml');
    const result = await ags('policy', 'test', FIXTURES.replace(/$/, '/failing'), '--junit', report);
    expect(result.code).toBe(1);
    const junit = await readJunit(report);
    expect(junit).toMatchObject({ name: 'ags policy test', tests: 3, failures: 2, errors: 0 });
    const suite = (junit.testsuite as Array<Record<string, unknown>>)[0];
    expect(suite).toMatchObject({ name: `${FIXTURES}/failing/refunds.test.yaml`, tests: 3, failures: 2 });
    const cases = suite.testcase as Array<{ name: string; failure?: Array<{ message: string }> }>;
    expect(cases.map((testCase) => testCase.name)).toEqual(['small refunds pass', 'trusted agents refund anything', 'refunds & <markup> are escaped']);
    expect(cases[0].failure).toBeUndefined();
    expect(cases[1].failure?.[0].message).toContain('got deny by policy refunds, rule large-refunds');
    expect(cases[2].failure?.[0].message).toContain('expected deny; got require_approval');
  });

  it('decides on the session facts a test gives (labels, calls made earlier)', async () => {
    const result = await ags('policy', 'test', `${FIXTURES}/session`);
    expect(result.stdout).toContain(`PASS ${FIXTURES}/session/mail.test.yaml:2:5 mail after reading customer data is denied`);
    expect(result.stdout).toContain('3 tests, 3 passed, 0 failed (1 file)');
    expect(result.code).toBe(0);
  });

  it('runs the policy files a test file names, relative to it', async () => {
    const result = await ags('policy', 'test', `${FIXTURES}/named/refunds.test.yaml`);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('1 tests, 1 passed, 0 failed (1 file)');
  });

  it('runs every test file under a tree, and fails when one of them does', async () => {
    const tree = path.join(scratch, 'tree');
    for (const name of ['passing', 'failing']) fs.cpSync(path.join(ROOT, FIXTURES, name), path.join(tree, name), { recursive: true });
    const result = await ags('policy', 'test', tree);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('6 tests, 4 passed, 2 failed (2 files)');
  });

  it('reports a malformed test file with its file, line and column: exit 2 (could not run)', async () => {
    const file = `${FIXTURES}/bad-test/refunds.test.yaml`;
    const result = await ags('policy', 'test', `${FIXTURES}/bad-test`);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('could not run the tests');
    expect(result.stderr).toContain(`${file}:3:46: unknown key 'acton' in input`);
    expect(result.stderr).toContain(`${file}:7:25: 'decision' must be one of allow, deny, require_approval`);
  });

  it('reports a malformed policy file with its file, line and column: exit 2', async () => {
    const result = await ags('policy', 'test', `${FIXTURES}/bad-policy`);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${FIXTURES}/bad-policy/policies.yaml:4:33: policy "refunds", rule "refunds#0": expected a value, found '>'`);
  });

  it('reports YAML that does not parse with its line and column: exit 2', async () => {
    const file = path.join(scratch, 'broken.test.yaml');
    fs.writeFileSync(file, 'tests:\n  - name: x\n    input: { action: read:x\n');
    fs.writeFileSync(path.join(scratch, 'policies.yaml'), 'policies: []\n');
    const result = await ags('policy', 'test', file);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: YAML syntax error`));
  });

  it.each([
    ['a directory without test files', () => path.join(ROOT, 'docs'), 'no *.test.yaml files'],
    ['a path that does not exist', () => 'no/such/dir', 'no such file or directory'],
    ['a policies file without --input', () => `${FIXTURES}/passing/policies.yaml`, 'not a *.test.yaml file'],
  ])('exits 2 for %s', async (_what, target, message) => {
    const result = await ags('policy', 'test', target());
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(message);
  });

  it('exits 2 on a usage error (no path), not 1: no test ran', async () => {
    const result = await ags('policy', 'test');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("missing required argument 'path'");
  });
});
