import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLocalJWKSet, JSONWebKeySet, jwtVerify } from 'jose';
import { call } from './support/http-client';
import { startGateway, TEST_PUBLIC_URL, testEnv, TestGateway } from './support/test-gateway';

/** The `ags` command-line tool, run as a user runs it, on the gateway's database. */


const CLI = path.resolve(__dirname, '../dist/src/cli/main.js');

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startGateway();
});
afterAll(() => gateway.close());

function ags(...args: string[]): Promise<CliResult> {
  return agsWith({}, ...args);
}

function agsWith(env: Record<string, string>, ...args: string[]): Promise<CliResult> {
  return agsIn({ PATH: process.env.PATH ?? '', ...testEnv(env) }, args);
}

/** Without these variables of the test environment (a shell that lacks the gateway's settings). */
function agsWithout(names: string[], env: Record<string, string>, ...args: string[]): Promise<CliResult> {
  const full: Record<string, string> = { PATH: process.env.PATH ?? '', ...testEnv(env) };
  for (const name of names) delete full[name];
  return agsIn(full, args);
}

function agsIn(env: Record<string, string>, args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env, timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a command that must succeed and returns its `key: value` lines. */
async function agsOk(...args: string[]): Promise<Record<string, string>> {
  const result = await ags(...args);
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  return Object.fromEntries(
    result.stdout
      .split('\n')
      .map((line) => /^(\w+): (.*)$/.exec(line))
      .filter((match): match is RegExpExecArray => match !== null)
      .map((match) => [match[1], match[2]]),
  );
}

async function verifyToken(token: string) {
  const jwks = await call<JSONWebKeySet>(gateway.url, 'GET', '/.well-known/jwks.json');
  const { payload } = await jwtVerify(token, createLocalJWKSet(jwks.body), { issuer: TEST_PUBLIC_URL });
  return payload;
}

async function newOrg(plan = 'enterprise'): Promise<{ id: string; adminToken: string }> {
  const printed = await agsOk('orgs', 'create', '--name', `CLI ${plan} org`, '--plan', plan);
  return { id: printed.id, adminToken: printed.adminToken };
}

describe('ags orgs create', () => {
  it('prints the id and an admin token that works on the gateway', async () => {
    const printed = await agsOk('orgs', 'create', '--name', 'Acme CLI', '--email', 'ops@acme.test', '--plan', 'starter');
    expect(printed.id).toMatch(/^org_[0-9a-f]+$/);
    expect(printed.adminToken).toMatch(/^adm_/);
    const org = await call(gateway.url, 'GET', '/admin/organization', { adminToken: printed.adminToken });
    expect(org.status).toBe(200);
    expect(org.body).toMatchObject({ id: printed.id, name: 'Acme CLI', plan: 'starter', billingEmail: 'ops@acme.test', limits: { agents: 10 } });
  });

  it('puts an organization created without --plan on free', async () => {
    const printed = await agsOk('orgs', 'create', '--name', 'Planless');
    const org = await call(gateway.url, 'GET', '/admin/organization', { adminToken: printed.adminToken });
    expect(org.status).toBe(200);
    expect(org.body).toMatchObject({ id: printed.id, plan: 'free', limits: { agents: 2 } });
  });
});

describe('ags agents', () => {
  let org: { id: string; adminToken: string };
  let agentId: string;

  beforeAll(async () => {
    org = await newOrg();
  });

  it('create prints the id and a token; the agent is visible through the admin API', async () => {
    const printed = await agsOk('agents', 'create', '--name', 'cli-bot', '--tier', 'trusted', '--tags', 'a,b', '--org', org.id);
    expect(printed.id).toMatch(/^agent_[0-9a-f]+$/);
    agentId = printed.id;
    const payload = await verifyToken(printed.token);
    expect(payload).toMatchObject({ sub: agentId, name: 'cli-bot', tier: 'trusted', trust: 'trusted', tags: ['a', 'b'], org: org.id });

    const agent = await call(gateway.url, 'GET', `/admin/agents/${agentId}`, { adminToken: org.adminToken });
    expect(agent.status).toBe(200);
    expect(agent.body).toMatchObject({ id: agentId, name: 'cli-bot', trustTier: 'trusted', tags: ['a', 'b'], status: 'active' });
  });

  it('list shows the organization’s agents', async () => {
    const other = await agsOk('agents', 'create', '--name', 'second-bot', '--org', org.id);
    const result = await ags('agents', 'list', '--org', org.id);
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain(agentId);
    expect(lines[0]).toContain('cli-bot');
    expect(lines[0]).toContain('trusted');
    expect(lines[0]).toContain('a,b');
    expect(lines[1]).toContain(other.id);
    expect(lines[1]).toContain('unverified');
  });

  it('token prints a fresh token that verifies against the JWKS', async () => {
    const printed = await agsOk('agents', 'token', agentId);
    const payload = await verifyToken(printed.token);
    expect(payload).toMatchObject({ sub: agentId, tier: 'trusted', org: org.id });
    expect(payload.exp! - payload.iat!).toBe(24 * 60 * 60);
  });

  it('token issues what the gateway accepts without its PUBLIC_URL or PORT, and refuses under another PUBLIC_URL', async () => {
    const bare = await agsWithout(['PUBLIC_URL', 'PORT'], {}, 'agents', 'token', agentId);
    expect(bare.code).toBe(0);
    const token = /^token: (.*)$/m.exec(bare.stdout)![1];
    expect(await verifyToken(token)).toMatchObject({ sub: agentId, iss: TEST_PUBLIC_URL });
    const elsewhere = await agsWith({ PUBLIC_URL: 'http://elsewhere.test' }, 'agents', 'token', agentId);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain(`PUBLIC_URL=http://elsewhere.test here, but the gateway on this database issues and accepts tokens of ${TEST_PUBLIC_URL}`);
    expect(elsewhere.stdout).not.toMatch(/token:/);
  });

  it('revoke revokes the agent, as the admin API shows', async () => {
    const printed = await agsOk('agents', 'revoke', agentId);
    expect(printed.status).toBe('revoked');
    const agent = await call(gateway.url, 'GET', `/admin/agents/${agentId}`, { adminToken: org.adminToken });
    expect(agent.body).toMatchObject({ id: agentId, status: 'revoked' });
    const list = await ags('agents', 'list', '--org', org.id);
    expect(list.stdout).not.toContain(agentId);
  });

  it('token refuses a revoked agent', async () => {
    const result = await ags('agents', 'token', agentId);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/revoked/);
    expect(result.stdout).not.toMatch(/token:/);
  });
});

describe('ags errors', () => {
  it.each<[string, string[], RegExp]>([
    ['revoke of an unknown agent', ['agents', 'revoke', 'agent_nope'], /agent_nope.*not found/],
    ['token of an unknown agent', ['agents', 'token', 'agent_nope'], /agent_nope.*not found/],
    ['an unknown tier', ['agents', 'create', '--name', 'x', '--tier', 'bogus'], /--tier.*unverified, verified, trusted, privileged/],
    ['an empty --name', ['orgs', 'create', '--name', ' '], /--name must be 1-200 characters with a visible one/],
    ['a --name of 201 characters', ['orgs', 'create', '--name', 'n'.repeat(201)], /--name must be 1-200 characters/],
    ['a --name with a line break', ['orgs', 'create', '--name', 'Acme\nplan: enterprise'], /no control characters/],
    ['an unknown organization', ['agents', 'create', '--name', 'x', '--org', 'org_nope'], /org_nope.*not found/],
    ['an unknown plan', ['orgs', 'create', '--name', 'x', '--plan', 'gold'], /--plan.*free, starter, professional, enterprise/],
    ['a malformed email', ['orgs', 'create', '--name', 'x', '--email', 'not-an-email'], /--email/],
    ['a missing --name', ['orgs', 'create'], /--name/],
    ['a malformed --ttl', ['agents', 'token', 'agent_nope', '--ttl', 'forever'], /--ttl/],
    ['a zero --ttl', ['agents', 'token', 'agent_nope', '--ttl', '0s'], /--ttl 0s/],
    ['a --ttl under a second', ['agents', 'token', 'agent_nope', '--ttl', '0.4s'], /--ttl 0.4s/],
  ])('%s exits non-zero with a message on stderr', async (_case, args, message) => {
    const result = await ags(...args);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).toMatch(/\n$/);
    expect(result.stdout).not.toMatch(/adminToken:|token:/);
  });

  it('a PostgreSQL server it cannot reach exits 1 with the reason on stderr, leaving out the password', async () => {
    const result = await agsWith({ DATABASE_URL: 'postgres://bob:hunter2secret@127.0.0.1:1/nodb' }, 'agents', 'list');
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toMatch(/^error: .*ECONNREFUSED.*\n$/);
    expect(result.stderr).not.toContain('hunter2secret');
  });

  it('an embedded database in use by another process exits 1 saying so', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ags-busy-'));
    // The lock a running gateway holds on its data directory: this (running) process's pid.
    fs.writeFileSync(path.join(dataDir, 'embedded.lock'), String(process.pid));
    try {
      const result = await agsWith({ DATABASE_URL: '', DATA_DIR: dataDir }, 'agents', 'list');
      expect(result).toMatchObject({ code: 1, stdout: '' });
      expect(result.stderr).toBe(`error: the embedded database in ${dataDir} is in use by process ${process.pid}; stop it first, or set DATABASE_URL to share a PostgreSQL server\n`);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('creates nothing for an unknown tier', async () => {
    const org = await newOrg();
    const result = await ags('agents', 'create', '--name', 'bad-tier', '--tier', 'bogus', '--org', org.id);
    expect(result.code).not.toBe(0);
    const list = await call<{ agents: unknown[] }>(gateway.url, 'GET', '/admin/agents?includeRevoked=true', { adminToken: org.adminToken });
    expect(list.body.agents).toEqual([]);
  });
});

describe('ags usage errors', () => {
  it.each<[string, string[], RegExp, string]>([
    ['an unknown command', ['bogus'], /^error: unknown command 'bogus'\n/, 'ags'],
    ['an unknown alerts subcommand', ['alerts', 'bogus'], /^error: unknown command 'bogus'\n/, 'ags alerts'],
    ['an unknown orgs subcommand', ['orgs', 'bogus'], /^error: unknown command 'bogus'\n/, 'ags orgs'],
    ['an unknown agents subcommand', ['agents', 'remove', 'agent_x'], /^error: unknown command 'remove'\n/, 'ags agents'],
    ['an unknown policies subcommand', ['policies', 'lint', 'x.yaml'], /^error: unknown command 'lint'\n/, 'ags policies|policy'],
    ['an unknown option', ['orgs', 'create', '--name', 'x', '--bogus'], /^error: unknown option '--bogus'\n/, 'ags orgs create'],
    ['an unknown option of ags itself', ['--bogus'], /^error: unknown option '--bogus'\n/, 'ags'],
    ['a missing --name', ['agents', 'create', '--tier', 'trusted'], /^error: required option '--name <name>' not specified\n/, 'ags agents create'],
    ['a missing argument', ['agents', 'revoke'], /^error: missing required argument 'agentId'\n/, 'ags agents revoke'],
    ['an option without its value', ['agents', 'create', '--name'], /^error: option '--name <name>' argument missing\n/, 'ags agents create'],
    ['an argument too many', ['agents', 'list', 'extra'], /^error: too many arguments for 'list'/, 'ags agents list'],
  ])('%s exits 1 with the message and the usage on stderr', async (_case, args, message, usage) => {
    const result = await ags(...args);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).toContain(`\nUsage: ${usage} [options]`);
    expect(result.stdout).toBe('');
  });

  it('creates no agent when a surplus argument is refused', async () => {
    const org = await newOrg();
    const result = await ags('agents', 'create', 'surplus', '--name', 'extra-arg', '--org', org.id);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/too many arguments for 'create'/);
    const list = await call<{ agents: unknown[] }>(gateway.url, 'GET', '/admin/agents?includeRevoked=true', { adminToken: org.adminToken });
    expect(list.body.agents).toEqual([]);
  });

  it.each([[[]], [['help']], [['orgs']], [['agents']], [['policies']], [['alerts']]])('ags %j prints its usage on stdout and exits 0', async (command) => {
    const result = await ags(...command);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    // `ags policy` is another name for `ags policies` (docs/cli.md), and the usage line says so.
    const usage = ['ags', ...command.filter((word) => word !== 'help')].join(' ').replace('policies', 'policies\\|policy');
    expect(result.stdout).toMatch(new RegExp(`^Usage: ${usage} \\[options\\] \\[command\\]`));
  });
});

describe('ags --help', () => {
  it.each([[[]], [['orgs']], [['orgs', 'create']], [['orgs', 'list']], [['orgs', 'rotate-token']], [['agents']], [['agents', 'create']], [['agents', 'list']], [['agents', 'revoke']], [['agents', 'token']]])(
    'ags %j --help prints usage and exits 0',
    async (command) => {
      const result = await ags(...command, '--help');
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(new RegExp(`^Usage: ${['ags', ...command].join(' ')} `));
    },
  );
});
