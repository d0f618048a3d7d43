import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { startGateway, TEST_ADMIN_TOKEN, TestGateway } from './support/test-gateway';

/**
 * Policies from git (docs/policies.md "Policies from git"): a real repository on a local path,
 * fetched by the gateway with the git command; commits as policy versions, refused commits,
 * an unreachable repository, and signed commits checked against an SSH allowed-signers file.
 */

interface GitStatus {
  url: string;
  branch: string;
  commit: string | null;
  error: { commit: string | null; message: string } | null;
}

const POLICIES = `policies:
  - name: no-secrets
    match: { action: "read:secrets*" }
    rules:
      - name: secrets
        condition: agent.trust_tier < privileged
        action: deny
        reason: Secrets need a privileged agent
`;

const TESTS = `tests:
  - name: secrets are denied to trusted agents
    input: { agent: { trust_tier: trusted }, action: read:secrets/key }
    expect: { decision: deny, policy: no-secrets, rule: secrets }
`;

let scratch: string;

function git(repo: string, ...args: string[]): string {
  return execFileSync('git', ['-C', repo, ...args], { env: { PATH: process.env.PATH ?? '', HOME: scratch, GIT_CONFIG_NOSYSTEM: '1' }, encoding: 'utf8' }).trim();
}

/** Writes the files and commits them; answers the commit id. */
function commit(repo: string, files: Record<string, string>, message: string, ...options: string[]): string {
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(repo, name), text);
  git(repo, 'add', '-A');
  git(repo, 'commit', '--quiet', ...options, '-m', message);
  return git(repo, 'rev-parse', 'HEAD');
}

function newRepository(name: string): string {
  const repo = path.join(scratch, name);
  fs.mkdirSync(repo);
  git(repo, 'init', '--quiet', '--initial-branch=main');
  git(repo, 'config', 'user.name', 'Policy Author');
  git(repo, 'config', 'user.email', 'author@example.com');
  return repo;
}

async function gitStatus(gateway: TestGateway): Promise<GitStatus> {
  const ready = await call<{ details?: { policiesGit: GitStatus } }>(gateway.url, 'GET', '/health/ready');
  return ready.body.details!.policiesGit;
}

/** Polls readiness until the git status satisfies `done` (the gateway polls the branch every second). */
async function until(gateway: TestGateway, done: (status: GitStatus) => boolean): Promise<GitStatus> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const status = await gitStatus(gateway);
    if (done(status) || Date.now() > deadline) return status;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function admin<T = Record<string, unknown>>(gateway: TestGateway, method: string, route: string, body?: string): Promise<{ status: number; body: T }> {
  return call<T>(gateway.url, method, route, { adminToken: TEST_ADMIN_TOKEN, body, headers: body === undefined ? undefined : { 'content-type': 'application/yaml' } });
}

beforeAll(() => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ags-git-e2e-'));
});
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

describe('policies from git', () => {
  let database: OwnDatabase;
  let gateway: TestGateway;
  let repo: string;
  let first: string;
  const alerts: Array<{ trigger: string; title: string; message: string }> = [];
  let receiver: http.Server;

  beforeAll(async () => {
    receiver = http.createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        alerts.push(JSON.parse(body) as { trigger: string; title: string; message: string });
        response.end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    repo = newRepository('policies');
    first = commit(repo, { 'policies.yaml': POLICIES, 'policies.test.yaml': TESTS }, 'Secrets need a privileged agent');
    database = await ownDatabase();
    gateway = await startGateway({
      DATABASE_URL: database.url,
      POLICIES_GIT_URL: repo,
      POLICIES_GIT_POLL_INTERVAL: '1s',
      ALERT_WEBHOOK_URL: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/alerts`,
      ALERT_RATE_LIMIT: '1000',
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await database?.dispose();
    receiver.close();
  });

  it('puts the branch’s policies in force at start, as a version naming the commit', async () => {
    const status = await until(gateway, (current) => current.commit === first);
    expect(status).toMatchObject({ url: repo, branch: 'main', commit: first, error: null });
    const listed = await admin<{ policies: Array<{ name: string; origin: string }> }>(gateway, 'GET', '/admin/policies');
    expect(listed.body.policies).toEqual([expect.objectContaining({ name: 'no-secrets', origin: 'git' })]);
    const history = await admin<{ versions: Array<{ policy: string; actor: string; kind: string }> }>(gateway, 'GET', '/admin/policies/versions');
    expect(history.body.versions[0]).toMatchObject({ policy: 'no-secrets', kind: 'created', actor: `git:${first}` });
  });

  it('refuses API edits to policies git owns (409), and lets API policies live beside them', async () => {
    const edit = await admin<{ error: string; message: string }>(gateway, 'PUT', '/admin/policies/no-secrets', 'name: no-secrets\nrules: []\n');
    expect(edit.status).toBe(409);
    expect(edit.body.message).toContain('kept in git');
    expect((await admin(gateway, 'DELETE', '/admin/policies/no-secrets')).status).toBe(409);
    expect((await admin(gateway, 'PUT', '/admin/policies/local', 'name: local\nrules: []\n')).status).toBe(201);
  });

  it('refuses a commit whose tests fail, keeps the last good one, and says so in readiness and an alert', async () => {
    const loose = commit(repo, { 'policies.yaml': POLICIES.replace('< privileged', '< trusted') }, 'Trusted agents read secrets');
    const status = await until(gateway, (current) => current.error?.commit === loose);
    expect(status.commit).toBe(first);
    expect(status.error?.message).toContain('policies.test.yaml:2:5: test "secrets are denied to trusted agents" failed: expected deny');
    const ready = await call(gateway.url, 'GET', '/health/ready');
    expect(ready.status).toBe(200);
    const policy = await admin<{ rules: Array<{ condition: string }> }>(gateway, 'GET', '/admin/policies/no-secrets');
    expect(policy.body.rules[0].condition).toBe('agent.trust_tier < privileged');
    const deadline = Date.now() + 10_000;
    while (!alerts.some((alert) => alert.title.includes(loose.slice(0, 12))) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(alerts.find((alert) => alert.title.includes(loose.slice(0, 12)))).toMatchObject({ trigger: 'policy_source', title: `Policies from git: commit ${loose.slice(0, 12)} refused` });
  });

  it('refuses a commit that does not parse, naming the file, line and column', async () => {
    const broken = commit(repo, { 'policies.yaml': `${POLICIES}      - condition: args.x >> 1\n        action: deny\n        reason: x\n` }, 'Broken');
    const status = await until(gateway, (current) => current.error?.commit === broken);
    expect(status.commit).toBe(first);
    expect(status.error?.message).toMatch(/policies\.yaml:9:\d+: policy "no-secrets"/);
  });

  it('applies the next good commit', async () => {
    const good = commit(repo, { 'policies.yaml': POLICIES.replace('Secrets need a privileged agent', 'Only privileged agents read secrets') }, 'Reword');
    const status = await until(gateway, (current) => current.commit === good);
    expect(status.error).toBeNull();
    const policy = await admin<{ rules: Array<{ reason: string }> }>(gateway, 'GET', '/admin/policies/no-secrets');
    expect(policy.body.rules[0].reason).toBe('Only privileged agents read secrets');
  });

  it('keeps the last good commit while the repository is unreachable, and retries on its schedule', async () => {
    const inForce = (await gitStatus(gateway)).commit;
    const moved = `${repo}-away`;
    fs.renameSync(repo, moved);
    try {
      const status = await until(gateway, (current) => current.error !== null && current.error.commit === null);
      expect(status.commit).toBe(inForce);
      expect(status.error?.message).toContain('cannot fetch branch main');
    } finally {
      fs.renameSync(moved, repo);
    }
    const recovered = await until(gateway, (current) => current.error === null);
    expect(recovered).toMatchObject({ commit: inForce, error: null });
  });
});

describe('policies from git with an allowed-signers file', () => {
  let database: OwnDatabase;
  let gateway: TestGateway;
  let repo: string;
  let signed: string;

  beforeAll(async () => {
    const key = path.join(scratch, 'signing-key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'author@example.com', '-f', key]);
    const signers = path.join(scratch, 'allowed_signers');
    fs.writeFileSync(signers, `author@example.com ${fs.readFileSync(`${key}.pub`, 'utf8').trim()}\n`);
    repo = newRepository('signed');
    git(repo, 'config', 'gpg.format', 'ssh');
    git(repo, 'config', 'user.signingkey', key);
    signed = commit(repo, { 'policies.yaml': POLICIES, 'policies.test.yaml': TESTS }, 'Signed', '-S');
    database = await ownDatabase();
    gateway = await startGateway({ DATABASE_URL: database.url, POLICIES_GIT_URL: repo, POLICIES_GIT_POLL_INTERVAL: '1s', POLICIES_GIT_ALLOWED_SIGNERS: signers });
  });
  afterAll(async () => {
    await gateway?.close();
    await database?.dispose();
  });

  it('applies a commit signed by an allowed signer', async () => {
    expect(await until(gateway, (current) => current.commit === signed)).toMatchObject({ commit: signed, error: null });
  });

  it('refuses an unsigned commit and keeps the signed one in force', async () => {
    const unsigned = commit(repo, { 'policies.yaml': POLICIES.replace('Secrets need', 'Unsigned: secrets need') }, 'Unsigned', '--no-gpg-sign');
    const status = await until(gateway, (current) => current.error?.commit === unsigned);
    expect(status.commit).toBe(signed);
    expect(status.error?.message).toContain(`commit ${unsigned.slice(0, 12)} is not signed by an allowed signer`);
  });
});
