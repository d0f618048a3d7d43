import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { call, TestResponse } from './support/http-client';
import { startGateway, TEST_ADMIN_TOKEN, testEnv, TestGateway } from './support/test-gateway';
import { ownDatabase } from './support/own-database';

/**
 * POLICIES_FILE: loaded into the bootstrap organization at start, reloaded on SIGHUP. These tests
 * change org_default, so they run on a database of their own.
 */

interface PolicyBody {
  name: string;
  origin: string;
  version: number;
  rules: Array<{ name?: string; condition: string; action: string; reason: string }>;
}

interface PolicyList {
  version: number;
  policies: PolicyBody[];
}

interface VersionList {
  version: number;
  versions: Array<{ version: number; policy: string; kind: string; actor: string }>;
}

const ROOT = path.resolve(__dirname, '..');
const DEMO_FILE = path.join(ROOT, 'config', 'policies.yaml');
/** The built gateway (`npm run build`), started the way `npm run start:gateway` starts it. */
const GATEWAY_MAIN = path.join(ROOT, 'dist', 'src', 'main.js');
const doc = (...lines: string[]): string => `${lines.join('\n')}\n`;

function policyLines(name: string, condition: string, reason = `Denied by ${name}`): string[] {
  return [`  - name: ${name}`, '    rules:', `      - condition: ${JSON.stringify(condition)}`, '        action: deny', `        reason: ${reason}`];
}

const FILE_V1 = doc('policies:', ...policyLines('alpha', 'action == "write:alpha"'), ...policyLines('beta', 'action == "write:beta"'), ...policyLines('gamma', 'action == "write:gamma"'));
const FILE_V2 = doc('policies:', ...policyLines('alpha', 'action == "write:alpha"'), ...policyLines('beta', 'action == "write:beta2"'), ...policyLines('delta', 'action == "write:delta"'));
const FILE_V3 = doc('policies:', ...policyLines('alpha', 'action == "write:alpha"'), ...policyLines('beta', 'action == "write:beta2"'));
/** Line 4: `      - condition: "agent.level > 1"`; `level` starts at column 27. */
const FILE_INVALID = doc('policies:', ...policyLines('alpha', 'agent.level > 1'), ...policyLines('beta', 'action == "write:beta"'));


/**
 * Runs the built gateway until it exits (a valid file would keep it running: the timeout kills it).
 * A start that fails in this process would leave the half-started application open, so the
 * failing start runs in a child process, as an operator would see it.
 */
function runGateway(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [GATEWAY_MAIN], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 30_000 }, (error, _stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stderr });
    });
  });
}

/** Polls until `read` returns a value (SIGHUP reloads asynchronously). */
async function eventually<T>(read: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

let database: { url: string; dispose(): Promise<void> };
let dir: string;
let policiesFile: string;

beforeAll(async () => {
  if (!fs.existsSync(GATEWAY_MAIN)) throw new Error(`${GATEWAY_MAIN} is missing: run npm run build first`);
  database = await ownDatabase();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-policies-file-'));
  policiesFile = path.join(dir, 'policies.yaml');
});
afterAll(async () => {
  await database.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});

function start(file = policiesFile): Promise<TestGateway> {
  return startGateway({ DATABASE_URL: database.url, POLICIES_FILE: file });
}

function admin<T>(gateway: TestGateway, method: string, route: string, body?: unknown): Promise<TestResponse<T>> {
  return call<T>(gateway.url, method, route, { adminToken: TEST_ADMIN_TOKEN, body, headers: typeof body === 'string' ? { 'content-type': 'application/yaml' } : undefined });
}

async function list(gateway: TestGateway): Promise<PolicyList> {
  const response = await admin<PolicyList>(gateway, 'GET', '/admin/policies');
  expect(response.status).toBe(200);
  return response.body;
}

function hangUp(): void {
  process.emit('SIGHUP', 'SIGHUP');
}

describe('POLICIES_FILE', () => {
  it('refuses to start with an invalid file, naming the file, line and column', async () => {
    const invalid = path.join(dir, 'invalid.yaml');
    fs.writeFileSync(invalid, FILE_INVALID);
    const result = await runGateway({ ...testEnv({ DATABASE_URL: database.url, POLICIES_FILE: invalid }), PORT: '0' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${invalid}:4:27: policy "alpha", rule "alpha#0": unknown agent field 'level'`);
  });

  describe('with a valid file', () => {
    let gateway: TestGateway;
    let loadedVersion: number;

    beforeAll(async () => {
      fs.writeFileSync(policiesFile, FILE_V1);
      gateway = await start();
    });
    afterAll(() => gateway.close());

    it('loads it into org_default at start, with origin file', async () => {
      const loaded = await list(gateway);
      expect(loaded.policies.map((policy) => [policy.name, policy.origin, policy.version])).toEqual([
        ['alpha', 'file', loaded.version],
        ['beta', 'file', loaded.version],
        ['gamma', 'file', loaded.version],
      ]);
      expect(loaded.policies[1].rules).toEqual([{ condition: 'action == "write:beta"', action: 'deny', reason: 'Denied by beta' }]);
      loadedVersion = loaded.version;
      const history = await admin<VersionList>(gateway, 'GET', '/admin/policies/versions');
      expect(history.body.versions.filter((entry) => entry.version === loadedVersion).map(({ policy, kind, actor }) => ({ policy, kind, actor }))).toEqual([
        { policy: 'alpha', kind: 'created', actor: 'file' },
        { policy: 'beta', kind: 'created', actor: 'file' },
        { policy: 'gamma', kind: 'created', actor: 'file' },
      ]);
      const simulated = await admin<{ decision: string; policy: string }>(gateway, 'POST', '/admin/policies/simulate', { input: { action: 'write:gamma' } });
      expect(simulated.body).toMatchObject({ decision: 'deny', policy: 'gamma' });
    });

    it('makes no new version when restarted with the same file', async () => {
      const again = await start();
      try {
        expect((await list(again)).version).toBe(loadedVersion);
      } finally {
        await again.close();
      }
    });

    it('reloads the edited file on SIGHUP: changed and new policies, removed ones deleted, API ones kept', async () => {
      const created = await admin(gateway, 'PUT', '/admin/policies/api-made', doc('name: api-made', 'rules:', '  - condition: action == "write:api"', '    action: deny', '    reason: API'));
      expect(created.status).toBe(201);
      const versionBefore = (await list(gateway)).version;

      fs.writeFileSync(policiesFile, FILE_V2);
      hangUp();
      await eventually(async () => ((await list(gateway)).version > versionBefore ? true : undefined));
      const reloaded = await list(gateway);
      expect(reloaded.version).toBe(versionBefore + 1);
      expect(reloaded.policies.map((policy) => [policy.name, policy.origin, policy.version])).toEqual([
        ['alpha', 'file', loadedVersion],
        ['beta', 'file', versionBefore + 1],
        ['api-made', 'api', versionBefore],
        ['delta', 'file', versionBefore + 1],
      ]);
      expect(reloaded.policies[1].rules[0].condition).toBe('action == "write:beta2"');
      expect((await admin(gateway, 'GET', '/admin/policies/gamma')).status).toBe(404);

      const history = await admin<VersionList>(gateway, 'GET', '/admin/policies/versions');
      const changes = history.body.versions.filter((entry) => entry.version === versionBefore + 1).map(({ policy, kind, actor }) => ({ policy, kind, actor }));
      expect(changes.sort((a, b) => a.policy.localeCompare(b.policy))).toEqual([
        { policy: 'beta', kind: 'updated', actor: 'file' },
        { policy: 'delta', kind: 'created', actor: 'file' },
        { policy: 'gamma', kind: 'deleted', actor: 'file' },
      ]);
      const simulated = await admin<{ decision: string; policy: string }>(gateway, 'POST', '/admin/policies/simulate', { input: { action: 'write:beta2' } });
      expect(simulated.body).toMatchObject({ decision: 'deny', policy: 'beta' });
    });

    it('keeps the current policies when the file is invalid on SIGHUP', async () => {
      const current = await list(gateway);
      fs.writeFileSync(policiesFile, FILE_INVALID);
      hangUp();
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await list(gateway)).toEqual(current);

      fs.writeFileSync(policiesFile, FILE_V3);
      hangUp();
      await eventually(async () => ((await list(gateway)).version > current.version ? true : undefined));
      const reloaded = await list(gateway);
      expect(reloaded.version).toBe(current.version + 1);
      expect(reloaded.policies.map((policy) => policy.name)).toEqual(['alpha', 'beta', 'api-made']);
    });
  });

  it('loads the demo set config/policies.yaml without error', async () => {
    const demo = parse(fs.readFileSync(DEMO_FILE, 'utf8')) as { policies: Array<{ name: string }> };
    expect(demo.policies.length).toBeGreaterThan(0);
    const gateway = await start(DEMO_FILE);
    try {
      const loaded = await list(gateway);
      const fromFile = loaded.policies.filter((policy) => policy.origin === 'file');
      expect(fromFile.map((policy) => policy.name)).toEqual(demo.policies.map((policy) => policy.name));
      expect(loaded.policies.map((policy) => policy.name)).toContain('api-made');
      const simulated = await admin<{ decision: string; policy: string; rule: string }>(gateway, 'POST', '/admin/policies/simulate', {
        input: { agent: { trust_tier: 'unverified' }, action: 'write:x' },
      });
      expect(simulated.body).toMatchObject({ decision: 'deny', policy: 'untrusted-writes', rule: 'unverified-cannot-write' });
    } finally {
      await gateway.close();
    }
  });
});
