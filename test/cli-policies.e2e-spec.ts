import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

/** `ags policies validate|test`: offline checks of a policies file, as an operator runs them. */

const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'dist', 'src', 'cli', 'main.js');
const VALID = 'test/fixtures/policies/valid.yaml';
const INVALID = 'test/fixtures/policies/invalid.yaml';
const DEMO = 'config/policies.yaml';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI (`npm run build`) from the project root, without any database configured. */
function ags(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '' }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

beforeAll(() => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
});

describe('ags policies validate', () => {
  it('accepts a valid file: exit 0 and `ok: N policies`', async () => {
    const run = await ags('policies', 'validate', VALID);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toBe('ok: 2 policies (reads, writes)\n');
  });

  it('accepts the demo set config/policies.yaml', async () => {
    const names = (parse(fs.readFileSync(path.join(ROOT, DEMO), 'utf8')) as { policies: Array<{ name: string }> }).policies.map((policy) => policy.name);
    const run = await ags('policies', 'validate', DEMO);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toBe(`ok: ${names.length} policies (${names.join(', ')})\n`);
  });

  it('lists every error of a bad file as file:line:column and exits 1', async () => {
    const run = await ags('policies', 'validate', INVALID);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    const located = run.stderr.split('\n').filter((line) => line.startsWith(`${INVALID}:`));
    expect(located).toEqual([
      expect.stringMatching(new RegExp(`^${INVALID}:6:30: policy "reads", rule "system-paths": unknown operator 'starts_wth'`)),
      expect.stringMatching(new RegExp(`^${INVALID}:11:46: policy "writes", rule "writes#0": bad rate_limit window`)),
      expect.stringMatching(new RegExp(`^${INVALID}:14:40: policy "writes", rule "writes#1": unknown trust tier 'admin'`)),
    ]);
    expect(run.stderr).toContain('3 error(s)');
  });

  it('exits 1 for a file it cannot read', async () => {
    const run = await ags('policies', 'validate', 'test/fixtures/policies/no-such-file.yaml');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('cannot read test/fixtures/policies/no-such-file.yaml');
  });

  it('prints its help with --help and exits 0', async () => {
    const run = await ags('policies', 'validate', '--help');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage:');
    expect(run.stdout).toContain('policies validate');
    expect(run.stdout).toContain('<file>');
  });
});

describe('ags policies test', () => {
  it('prints the decision and the trace of every rule tried, as JSON', async () => {
    const run = await ags('policies', 'test', VALID, '--input', JSON.stringify({ agent: { trust_tier: 'unverified' }, action: 'write:x' }));
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual({
      decision: 'deny',
      policy: 'writes',
      rule: 'writes#0',
      reason: 'Unverified agents cannot write',
      trace: [
        { policy: 'reads', applicable: false, rules: [] },
        {
          policy: 'writes',
          applicable: true,
          rules: [
            { rule: 'writes#0', action: 'deny', result: true },
            { rule: 'writes#1', action: 'deny', result: 'not-reached' },
          ],
        },
      ],
    });
  });

  it.each<[string, Record<string, unknown>, Record<string, unknown>]>([
    ['a named deny rule', { action: 'read:etc', args: { path: '/etc/passwd' } }, { decision: 'deny', policy: 'reads', rule: 'system-paths', reason: 'Access to system files blocked' }],
    ['a tier alias compared by rank', { agent: { trust_tier: 'standard' }, action: 'write:x', args: { size: 500 } }, { decision: 'deny', policy: 'writes', rule: 'writes#1', reason: 'Too big' }],
    ['an applicable policy with no rule fired', { agent: { trust_tier: 'elevated' }, action: 'write:x' }, { decision: 'allow', policy: 'writes', rule: null }],
    ['no applicable policy', { action: 'delete:x' }, { decision: 'allow', policy: 'default', rule: null }],
  ])('decides %s', async (_what, input, expected) => {
    const run = await ags('policies', 'test', VALID, '--input', JSON.stringify(input));
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject(expected);
  });

  it('exits 1 for --input that is not JSON', async () => {
    const run = await ags('policies', 'test', VALID, '--input', '{not json');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('--input must be JSON');
    expect(run.stdout).toBe('');
  });

  // As POST /admin/policies/simulate takes an object: anything else was decided as an empty input.
  it.each(['[1]', 'null', '"read:etc/passwd"', '42'])('exits 1 for --input %s, JSON but not an object', async (input) => {
    const run = await ags('policies', 'test', VALID, '--input', input);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('--input must be a JSON object');
    expect(run.stdout).toBe('');
  });

  it('exits 2 (could not run) for a policies file given without --input', async () => {
    const run = await ags('policies', 'test', VALID);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--input');
  });

  it('exits 1 with the positioned errors for a bad file', async () => {
    const run = await ags('policies', 'test', INVALID, '--input', JSON.stringify({ action: 'read:x' }));
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`${INVALID}:6:30:`);
  });
});
