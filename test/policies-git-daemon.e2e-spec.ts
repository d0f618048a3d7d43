import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { call } from './support/http-client';
import { createAgent, proxy } from './support/org-fixtures';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { eventually, freePort } from './support/processes';
import { createOrganization, startGateway, TestGateway, TestOrganization } from './support/test-gateway';
import { startUpstream, TestUpstream } from './support/upstream';

/**
 * Policies from git (docs/policies.md "Policies from git") fetched from a real git server: a
 * bare repository served by `git daemon` on loopback (git://), kept in step with an
 * organization other than the bootstrap one (POLICIES_GIT_ORG). Commits are pushed to it as an
 * author would push them; the daemon is stopped and started again to show the last good commit
 * staying in force.
 */

const POLICIES = `policies:
  - name: no-secrets
    match: { action: "read:secrets*" }
    rules:
      - name: secrets
        condition: "true"
        action: deny
        reason: Secrets are never read
`;

interface GitStatus {
  url: string;
  commit: string | null;
  error: { commit: string | null; message: string } | null;
}

let scratch: string;
let daemon: ChildProcess | undefined;
let daemonPort: number;

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: scratch } }).trim();
}

/** `git daemon` serving the bare repositories under scratch/served on loopback; resolves once it accepts connections. */
async function startDaemon(): Promise<void> {
  daemon = spawn('git', ['daemon', '--reuseaddr', '--export-all', `--base-path=${path.join(scratch, 'served')}`, '--listen=127.0.0.1', `--port=${daemonPort}`, path.join(scratch, 'served')], { stdio: 'ignore' });
  await eventually(async () => {
    try {
      git(scratch, 'ls-remote', `git://127.0.0.1:${daemonPort}/policies.git`);
      return true;
    } catch {
      return false;
    }
  }, 15_000, 'git daemon accepting connections');
}

async function stopDaemon(): Promise<void> {
  const stopping = daemon;
  daemon = undefined;
  if (stopping === undefined || stopping.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    stopping.once('exit', () => resolve());
    stopping.kill('SIGTERM');
  });
}

/** Commits the files in the author's clone and pushes them to the served repository. */
function push(work: string, files: Record<string, string>, message: string): string {
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(work, name), text);
  git(work, 'add', '-A');
  git(work, 'commit', '--quiet', '-m', message);
  git(work, 'push', '--quiet', 'origin', 'main');
  return git(work, 'rev-parse', 'HEAD');
}

describe('policies from a git server', () => {
  let database: OwnDatabase;
  let gateway: TestGateway;
  let upstream: TestUpstream;
  let org: TestOrganization;
  let work: string;
  let first: string;

  async function gitStatus(): Promise<GitStatus> {
    return (await call<{ details: { policiesGit: GitStatus } }>(gateway.url, 'GET', '/health/ready')).body.details.policiesGit;
  }

  beforeAll(async () => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ags-git-daemon-'));
    const bare = path.join(scratch, 'served', 'policies.git');
    fs.mkdirSync(bare, { recursive: true });
    git(bare, 'init', '--quiet', '--bare', '--initial-branch=main');
    work = path.join(scratch, 'work');
    fs.mkdirSync(work);
    git(work, 'init', '--quiet', '--initial-branch=main');
    git(work, 'config', 'user.name', 'Policy Author');
    git(work, 'config', 'user.email', 'author@example.com');
    git(work, 'remote', 'add', 'origin', bare);
    first = push(work, { 'policies.yaml': POLICIES }, 'No secrets');
    daemonPort = await freePort();
    await startDaemon();

    database = await ownDatabase();
    upstream = await startUpstream();
    // The organization is made first on the gateway's database, then the gateway follows the repository for it.
    const setup = await startGateway({ DATABASE_URL: database.url, UPSTREAM_URL: upstream.url });
    org = await createOrganization(setup);
    await setup.close();
    gateway = await startGateway({
      DATABASE_URL: database.url,
      UPSTREAM_URL: upstream.url,
      POLICIES_GIT_URL: `git://127.0.0.1:${daemonPort}/policies.git`,
      POLICIES_GIT_ORG: org.id,
      POLICIES_GIT_POLL_INTERVAL: '1s',
    });
  }, 120_000);
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
    await database?.dispose();
    await stopDaemon();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('puts the served branch’s policies in force for its organization, as a version naming the commit', async () => {
    expect(await gitStatus()).toMatchObject({ url: `git://127.0.0.1:${daemonPort}/policies.git`, commit: first, error: null });
    const listed = await call<{ policies: Array<{ name: string; origin: string }> }>(gateway.url, 'GET', '/admin/policies', { adminToken: org.adminToken });
    expect(listed.body.policies.map(({ name, origin }) => ({ name, origin }))).toEqual([{ name: 'no-secrets', origin: 'git' }]);
    const history = await call<{ versions: Array<{ actor: string }> }>(gateway.url, 'GET', '/admin/policies/versions', { adminToken: org.adminToken });
    expect(history.body.versions[0].actor).toBe(`git:${first}`);
    const agent = await createAgent(gateway, org, { name: 'reader' });
    expect((await proxy(gateway, agent.token, 'GET', '/secrets/key')).status).toBe(403);
    const edit = await call(gateway.url, 'PUT', '/admin/policies/no-secrets', { adminToken: org.adminToken, body: 'name: no-secrets\nrules: []\n', headers: { 'content-type': 'application/yaml' } });
    expect(edit.status).toBe(409);
  });

  it('applies a commit pushed to the server at the next poll', async () => {
    const next = push(work, { 'policies.yaml': POLICIES.replace('Secrets are never read', 'No secret is read') }, 'Reword');
    await eventually(async () => (await gitStatus()).commit === next, 20_000, 'the pushed commit in force');
    const agent = await createAgent(gateway, org, { name: 'reader-2' });
    const denied = await proxy(gateway, agent.token, 'GET', '/secrets/key');
    expect(denied.status).toBe(403);
    expect(denied.text).toContain('No secret is read');
  });

  it('keeps the last good commit while the server is down, says so, and catches up once it is back', async () => {
    await stopDaemon();
    await eventually(async () => (await gitStatus()).error?.commit === null, 20_000, 'the failed fetch in readiness');
    const inForce = (await gitStatus()).commit;
    const agent = await createAgent(gateway, org, { name: 'reader-3' });
    expect((await proxy(gateway, agent.token, 'GET', '/secrets/key')).status).toBe(403);
    await startDaemon();
    const next = push(work, { 'policies.yaml': `${POLICIES}  - name: no-exports\n    match: { action: "read:exports*" }\n    rules:\n      - condition: "true"\n        action: deny\n        reason: No exports\n` }, 'No exports');
    expect(next).not.toBe(inForce);
    await eventually(async () => {
      const status = await gitStatus();
      return status.commit === next && status.error === null;
    }, 20_000, 'the server back and its new commit in force');
    expect((await proxy(gateway, agent.token, 'GET', '/exports/all')).status).toBe(403);
  });
});
