import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';

/**
 * Organizations' git sources set through the admin API (docs/policies.md "Policies from git"):
 * two organizations, each following its own real repository (git init in a temp dir, a local
 * path under POLICIES_GIT_LOCAL_ROOT), with the rules of POLICIES_GIT_URL: each commit a policy
 * version naming it, a commit whose tests fail refused with the last good one in force, API
 * edits refused for the policies git owns; removing the source hands them back to the API.
 */

interface SourceView {
  url: string;
  branch: string;
  commit: string | null;
  error: { commit: string | null; message: string } | null;
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ags-git-api-e2e-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

function git(repo: string, ...args: string[]): string {
  return execFileSync('git', ['-C', repo, ...args], { env: { PATH: process.env.PATH ?? '', HOME: scratch, GIT_CONFIG_NOSYSTEM: '1' }, encoding: 'utf8' }).trim();
}

function commit(repo: string, files: Record<string, string>, message: string): string {
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(repo, name), text);
  git(repo, 'add', '-A');
  git(repo, 'commit', '--quiet', '-m', message);
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

function denyPolicy(name: string, action: string): string {
  return `policies:
  - name: ${name}
    match: { action: "${action}" }
    rules:
      - name: refused
        condition: agent.trust_tier < privileged
        action: deny
        reason: ${name} needs a privileged agent
`;
}

function testOf(name: string, action: string, decision: 'allow' | 'deny'): string {
  return `tests:
  - name: ${name} decides ${action}
    input: { agent: { trust_tier: trusted }, action: ${action} }
    expect: { decision: ${decision}${decision === 'deny' ? `, policy: ${name}, rule: refused` : ''} }
`;
}

describe('git sources set through the admin API', () => {
  let database: OwnDatabase;
  let gateway: TestGateway;
  let alpha: TestOrganization;
  let beta: TestOrganization;
  let alphaRepo: string;
  let betaRepo: string;
  let alphaFirst: string;
  let betaFirst: string;

  const as = <T = Record<string, unknown>>(org: TestOrganization, method: string, route: string, body?: unknown, yaml = false) =>
    call<T>(gateway.url, method, route, { adminToken: org.adminToken, body, headers: yaml ? { 'content-type': 'application/yaml' } : undefined });

  async function until(org: TestOrganization, done: (source: SourceView) => boolean): Promise<SourceView> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const source = (await as<SourceView>(org, 'GET', '/admin/policy-git')).body;
      if (done(source) || Date.now() > deadline) return source;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  beforeAll(async () => {
    alphaRepo = newRepository('alpha');
    betaRepo = newRepository('beta');
    alphaFirst = commit(alphaRepo, { 'policies.yaml': denyPolicy('alpha-secrets', 'read:secrets*'), 'policies.test.yaml': testOf('alpha-secrets', 'read:secrets/key', 'deny') }, 'Alpha: secrets need a privileged agent');
    betaFirst = commit(betaRepo, { 'policies.yaml': denyPolicy('beta-payments', 'write:payments*'), 'policies.test.yaml': testOf('beta-payments', 'write:payments/1', 'deny') }, 'Beta: payments need a privileged agent');
    database = await ownDatabase();
    gateway = await startGateway({ DATABASE_URL: database.url, POLICIES_GIT_LOCAL_ROOT: scratch });
    alpha = await createOrganization(gateway, 'enterprise', 'Alpha');
    beta = await createOrganization(gateway, 'enterprise', 'Beta');
  });
  afterAll(async () => {
    await gateway?.close();
    await database?.dispose();
  });

  it('refuses a source it cannot take, naming why (400)', async () => {
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'ags-git-outside-'));
    try {
      for (const body of [
        { url: outside },
        { url: `file://${outside}` },
        { url: 'relative/path' },
        { url: 'ext::sh -c touch% /tmp/pwned' },
        { url: 'git@example.com:acme/policies.git' },
        { url: alphaRepo, branch: '--upload-pack=evil' },
        { url: alphaRepo, branch: 'a..b' },
        { url: alphaRepo, path: '../etc' },
        { url: alphaRepo, pollInterval: '0s' },
        { url: alphaRepo, pollInterval: 'soon' },
        { url: alphaRepo, allowedSigners: '  ' },
      ]) {
        const answer = await as<{ error: string; message: string }>(alpha, 'PUT', '/admin/policy-git', body);
        expect({ body, status: answer.status, error: answer.body.error }).toEqual({ body, status: 400, error: 'invalid_request' });
      }
    } finally {
      fs.rmSync(outside, { recursive: true, force: true });
    }
    expect((await as(alpha, 'GET', '/admin/policy-git')).status).toBe(404);
  });

  it('keeps each organization’s policies in step with its own repository, as versions naming the commits', async () => {
    const set = await as<SourceView>(alpha, 'PUT', '/admin/policy-git', { url: alphaRepo, pollInterval: '1s' });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ url: alphaRepo, branch: 'main', commit: alphaFirst, error: null });
    expect((await as(beta, 'PUT', '/admin/policy-git', { url: `file://${betaRepo}`, branch: 'main', pollInterval: '1s' })).status).toBe(200);
    expect(await until(beta, (source) => source.commit === betaFirst)).toMatchObject({ commit: betaFirst, error: null });
    const alphaPolicies = (await as<{ policies: Array<{ name: string; origin: string }> }>(alpha, 'GET', '/admin/policies')).body.policies;
    const betaPolicies = (await as<{ policies: Array<{ name: string; origin: string }> }>(beta, 'GET', '/admin/policies')).body.policies;
    expect(alphaPolicies).toEqual([expect.objectContaining({ name: 'alpha-secrets', origin: 'git' })]);
    expect(betaPolicies).toEqual([expect.objectContaining({ name: 'beta-payments', origin: 'git' })]);
    const history = await as<{ versions: Array<{ policy: string; actor: string; kind: string }> }>(beta, 'GET', '/admin/policies/versions');
    expect(history.body.versions[0]).toMatchObject({ policy: 'beta-payments', kind: 'created', actor: `git:${betaFirst}` });
    // A new commit of one repository moves only its organization.
    const alphaSecond = commit(alphaRepo, { 'more.yaml': denyPolicy('alpha-keys', 'read:keys*') }, 'Alpha: keys too');
    expect(await until(alpha, (source) => source.commit === alphaSecond)).toMatchObject({ commit: alphaSecond, error: null });
    expect((await as<{ policies: Array<{ name: string }> }>(alpha, 'GET', '/admin/policies')).body.policies.map((policy) => policy.name).sort()).toEqual(['alpha-keys', 'alpha-secrets']);
    expect((await as<{ policies: Array<{ name: string }> }>(beta, 'GET', '/admin/policies')).body.policies.map((policy) => policy.name)).toEqual(['beta-payments']);
    const ready = await call<{ details: { policiesGitSources: { sources: number; failing: number } } }>(gateway.url, 'GET', '/health/ready');
    expect(ready.body.details.policiesGitSources).toEqual({ sources: 2, failing: 0 });
    expect(JSON.stringify(ready.body)).not.toContain(alphaRepo);
  });

  it('refuses API edits to the policies git owns (409)', async () => {
    const edit = await as<{ message: string }>(alpha, 'PUT', '/admin/policies/alpha-secrets', 'name: alpha-secrets\nrules: []\n', true);
    expect(edit.status).toBe(409);
    expect(edit.body.message).toMatch(/kept in git/);
    expect((await as(beta, 'DELETE', '/admin/policies/beta-payments')).status).toBe(409);
  });

  it('refuses a commit whose tests fail, keeping the last good commit in force and saying why', async () => {
    const inForce = (await as<SourceView>(beta, 'GET', '/admin/policy-git')).body.commit;
    const loose = commit(betaRepo, { 'policies.yaml': denyPolicy('beta-payments', 'write:other*') }, 'Beta: a policy its test contradicts');
    const refused = await until(beta, (source) => source.error?.commit === loose);
    expect(refused.commit).toBe(inForce);
    expect(refused.error!.message).toMatch(/test "beta-payments decides write:payments\/1" failed/);
    const policy = (await as<{ source: string }>(beta, 'GET', '/admin/policies/beta-payments')).body;
    expect(policy.source).toContain('write:payments*');
    const ready = await call<{ details: { policiesGitSources: { sources: number; failing: number } } }>(gateway.url, 'GET', '/health/ready');
    expect(ready.body.details.policiesGitSources).toEqual({ sources: 2, failing: 1 });
  });

  it('checks signatures against the allowed-signers text it was given: a signed commit applied, an unsigned one refused', async () => {
    const gamma = await createOrganization(gateway, 'enterprise', 'Gamma');
    const key = path.join(scratch, 'gamma-key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'author@example.com', '-f', key]);
    const repo = newRepository('gamma');
    git(repo, 'config', 'gpg.format', 'ssh');
    git(repo, 'config', 'user.signingkey', key);
    for (const [name, text] of Object.entries({ 'policies.yaml': denyPolicy('gamma-secrets', 'read:secrets*') })) fs.writeFileSync(path.join(repo, name), text);
    git(repo, 'add', '-A');
    git(repo, 'commit', '--quiet', '-S', '-m', 'Gamma: signed');
    const signed = git(repo, 'rev-parse', 'HEAD');
    const allowedSigners = `author@example.com ${fs.readFileSync(`${key}.pub`, 'utf8').trim()}`;
    const set = await as<SourceView & { signed: boolean }>(gamma, 'PUT', '/admin/policy-git', { url: repo, pollInterval: '1s', allowedSigners });
    expect(set.body).toMatchObject({ commit: signed, error: null, signed: true });
    expect(JSON.stringify(set.body)).not.toContain('ssh-ed25519');
    fs.writeFileSync(path.join(repo, 'policies.yaml'), denyPolicy('gamma-secrets', 'read:secret-keys*'));
    git(repo, 'add', '-A');
    git(repo, 'commit', '--quiet', '--no-gpg-sign', '-m', 'Gamma: unsigned');
    const unsigned = git(repo, 'rev-parse', 'HEAD');
    const refused = await until(gamma, (source) => source.error?.commit === unsigned);
    expect(refused.commit).toBe(signed);
    expect(refused.error!.message).toContain(`commit ${unsigned.slice(0, 12)} is not signed by an allowed signer`);
    expect((await as(gamma, 'DELETE', '/admin/policy-git')).status).toBe(204);
  });

  it('stops following git when removed: the policies stay and the API may change them again', async () => {
    expect((await as(alpha, 'DELETE', '/admin/policy-git')).status).toBe(204);
    expect((await as(alpha, 'GET', '/admin/policy-git')).status).toBe(404);
    const listed = (await as<{ policies: Array<{ name: string; origin: string }> }>(alpha, 'GET', '/admin/policies')).body.policies;
    expect(listed.map((policy) => policy.origin)).toEqual(['api', 'api']);
    expect((await as(alpha, 'PUT', '/admin/policies/alpha-secrets', 'name: alpha-secrets\nrules: []\n', true)).status).toBe(200);
    // The other organization still follows its repository.
    expect((await as<SourceView>(beta, 'GET', '/admin/policy-git')).status).toBe(200);
    expect((await as(beta, 'PUT', '/admin/policies/beta-payments', 'name: beta-payments\nrules: []\n', true)).status).toBe(409);
  });
});
