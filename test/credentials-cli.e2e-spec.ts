import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { call, TestResponse } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { eventually, freePort, GATEWAY_MAIN, launch, ServiceProcess, waitFor } from './support/processes';
import { testDatabaseKind } from './support/test-gateway';

/**
 * `ags credentials` (docs/cli.md) as an operator runs it: the built tool on the database of a
 * running gateway, which injects what the tool stores into the requests it forwards to a real
 * upstream. The secrets come in on standard input, from a file or typed at a terminal (a real
 * pseudo-terminal, util-linux's `script`), and appear in no output of the tool or the gateway.
 * On PostgreSQL the gateway keeps running and hears each change; on the embedded database,
 * which one process opens at a time, it is stopped while the tool runs, as docs/cli.md says.
 */

const CLI = path.resolve(__dirname, '../dist/src/cli/main.js');
const ADMIN_TOKEN = 'credentials-cli-e2e-admin-0123456789';
const secret = (label: string) => `sk_${label}_${randomBytes(18).toString('hex')}`;
const PIPED = secret('piped');
const FROM_FILE = secret('file');
const TYPED = secret('typed');
const IN_ARGV = secret('argv');
const SECRETS = [PIPED, FROM_FILE, TYPED, IN_ARGV];

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-credentials-cli-'));
const keyFile = path.join(scratch, 'credentials.key');
fs.writeFileSync(keyFile, randomBytes(32).toString('base64'));

const EMBEDDED = testDatabaseKind() === 'pglite';
let database: OwnDatabase;
let gatewayPort: number;
/** The gateway while it runs; every one started, for their logs. */
let running: ServiceProcess | null = null;
const gateways: ServiceProcess[] = [];
let upstream: http.Server;
let upstreamUrl: string;
let agentToken: string;
/** Every output of the tool and every answer: the secrets must be in none. */
const seen: string[] = [];

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

function env(): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: database.url,
    ADMIN_TOKEN,
    SIGNING_KEY_FILE: path.join(scratch, 'signing-key.pem'),
    CREDENTIALS_KEY_FILE: keyFile,
    UPSTREAM_URL: upstreamUrl,
    POLICIES_FILE: '/dev/null',
  };
}

async function gatewayUp(): Promise<ServiceProcess> {
  if (running !== null) return running;
  const started = launch(GATEWAY_MAIN, gatewayPort, { ...env(), PDP_GRPC_PORT: '0', AUDIT_FLUSH_MS: '10', LOG_LEVEL: 'debug', LOG_REQUESTS: 'true' });
  gateways.push(started);
  await waitFor(started, '/health', (status) => status === 200);
  running = started;
  return started;
}

/** Before the tool runs: the embedded database is the gateway's alone while it runs. */
async function toolsTurn(): Promise<void> {
  if (!EMBEDDED || running === null) return;
  await running.stop();
  running = null;
}

/** `ags ...args` with `stdin` piped in (and closed). */
async function ags(args: string[], stdin = ''): Promise<CliResult> {
  await toolsTurn();
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], { env: env(), timeout: 60_000 }, (error, stdout, stderr) => {
      seen.push(stdout, stderr);
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
    });
    child.stdin!.end(stdin);
  });
}

/** `key: value` lines of a command that must succeed. */
async function agsOk(args: string[], stdin = ''): Promise<Record<string, string>> {
  const result = await ags(args, stdin);
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  return Object.fromEntries(result.stdout.split('\n').flatMap((line) => [/^(\w+): (.*)$/.exec(line)].filter((match) => match !== null).map((match) => [match[1], match[2]])));
}

/** `ags ...args` on a pseudo-terminal: `typed` is sent, then Enter, once the tool shows its prompt. */
async function agsAtTerminal(args: string[], typed: string): Promise<{ code: number | null; screen: string }> {
  await toolsTurn();
  const command = [process.execPath, CLI, ...args].map((word) => `'${word}'`).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], { env: { ...env(), TERM: 'dumb' }, stdio: ['pipe', 'pipe', 'pipe'] });
  let screen = '';
  let sent = false;
  const collect = (chunk: Buffer) => {
    screen += chunk.toString();
    if (!sent && screen.includes('(not shown as you type): ')) {
      sent = true;
      child.stdin.write(`${typed}\r`);
    }
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      seen.push(screen);
      resolve({ code, screen });
    }),
  );
}

async function proxied(route: string): Promise<TestResponse> {
  const gateway = await gatewayUp();
  return call(gateway.url, 'GET', route, { bearer: agentToken, headers: { 'x-api-key': 'sk_guessed' } });
}

/** Waits until the gateway forwards to /payments with the key of that label (the tool's change reaches it through the database's notifications). */
async function gatewayInjects(label: string | null): Promise<void> {
  await eventually(async () => {
    const answer = await proxied('/proxy/payments/invoices');
    return label === null ? answer.status === 401 : answer.status === 200 && answer.body.key === label;
  }, 15_000, `the gateway forwarding ${label ?? 'no'} key`);
}

beforeAll(async () => {
  database = await ownDatabase();
  const accepted = new Map([
    [PIPED, 'piped'],
    [FROM_FILE, 'file'],
    [TYPED, 'typed'],
  ]);
  upstream = http.createServer((request, response) => {
    const label = accepted.get(String(request.headers['x-api-key']));
    response.writeHead(label === undefined ? 401 : 200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(label === undefined ? { error: 'bad api key' } : { key: label }));
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  gatewayPort = await freePort();
  const gateway = await gatewayUp();
  const agent = await call(gateway.url, 'POST', '/admin/agents', { adminToken: ADMIN_TOKEN, body: { name: 'payments-bot', trustTier: 'trusted' } });
  agentToken = agent.body.token as string;
}, 120_000);

afterAll(async () => {
  await running?.kill();
  await new Promise((resolve) => upstream?.close(resolve));
  await database?.dispose();
  fs.rmSync(scratch, { recursive: true, force: true });
});

describe('ags credentials', () => {
  let id: string;

  it('creates a credential from standard input, printing everything but the secret, and the running gateway injects it', async () => {
    expect((await proxied('/proxy/payments/invoices')).status).toBe(401);
    const created = await agsOk(['credentials', 'create', '--route', '/proxy/payments', '--type', 'header', '--name', 'X-Api-Key'], `${PIPED}\n`);
    expect(created).toEqual({ id: expect.stringMatching(/^cred_/), route: '/proxy/payments', type: 'header', name: 'X-Api-Key', edge: 'false', version: '1' });
    id = created.id;
    // The final line feed of `echo` is not part of the secret: the upstream accepts the key as piped.
    await gatewayInjects('piped');
  }, 120_000);

  it('lists the credentials with their route, placement and version, never their values', async () => {
    const listed = await ags(['credentials', 'list']);
    expect(listed).toEqual({ code: 0, stderr: '', stdout: `${id}\tactive\t/proxy/payments\theader:X-Api-Key\tv1\tgateway\n` });
  });

  it('rotates from a file; the gateway forwards the new key', async () => {
    const file = path.join(scratch, 'new-key');
    fs.writeFileSync(file, `${FROM_FILE}\n`, { mode: 0o600 });
    const rotated = await agsOk(['credentials', 'rotate', id, '--value-file', file]);
    expect(rotated).toMatchObject({ id, version: '2', rotatedAt: expect.any(String) });
    await gatewayInjects('file');
  }, 120_000);

  it('rotates with the secret typed at a terminal, which never shows it', async () => {
    const { code, screen } = await agsAtTerminal(['credentials', 'rotate', id], TYPED);
    expect(code).toBe(0);
    expect(screen).toContain('New credential value (not shown as you type): ');
    expect(screen).toMatch(/version: 3/);
    expect(screen).not.toContain(TYPED);
    await gatewayInjects('typed');
  }, 120_000);

  it('refuses the secret as an argument without repeating it, and stores nothing', async () => {
    for (const args of [
      ['credentials', 'create', '--route', '/proxy/search', '--type', 'bearer', `--value=${IN_ARGV}`],
      ['credentials', 'rotate', id, `--value=${IN_ARGV}`],
    ]) {
      const refused = await ags(args);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/never an argument/);
    }
    expect((await ags(['credentials', 'list'])).stdout.split('\n').filter((line) => line !== '')).toHaveLength(1);
  }, 240_000);

  it('says what is wrong with bad input, naming the problem', async () => {
    const cases: Array<[string[], string, RegExp]> = [
      [['credentials', 'create', '--route', '/proxy/x', '--type', 'cookie'], 'x', /--type must be one of: header, bearer, query/],
      [['credentials', 'create', '--route', '/proxy/x', '--type', 'header'], 'x', /name: required for a header credential/],
      [['credentials', 'create', '--route', '/elsewhere', '--type', 'bearer'], 'x', /a route is `\/proxy` or `\/proxy\/<prefix>`/],
      [['credentials', 'create', '--route', '/proxy/x', '--type', 'bearer'], '\n', /no credential value given/],
      [['credentials', 'create', '--route', '/proxy/x', '--type', 'bearer'], 'x'.repeat(9000), /longer than 8192 characters/],
      [['credentials', 'create', '--route', '/proxy/x', '--type', 'bearer', '--value-file', path.join(scratch, 'missing')], '', /--value-file .*missing: no such file/],
      [['credentials', 'rotate', 'cred_nope'], 'x', /Credential cred_nope not found/],
    ];
    for (const [args, stdin, message] of cases) {
      const refused = await ags(args, stdin);
      expect({ args, code: refused.code }).toEqual({ args, code: 1 });
      expect(refused.stderr).toMatch(message);
    }
  }, 300_000);

  it('deletes (revokes) it: the gateway stops injecting at once, and the list says revoked', async () => {
    const revoked = await agsOk(['credentials', 'delete', id]);
    expect(revoked).toMatchObject({ id, revokedAt: expect.any(String) });
    await gatewayInjects(null);
    expect((await ags(['credentials', 'list'])).stdout).toMatch(new RegExp(`^${id}\\trevoked\\t`));
    // `revoke` is the same command; a revoked credential stays revoked.
    expect((await agsOk(['credentials', 'revoke', id])).revokedAt).toBe(revoked.revokedAt);
  }, 240_000);

  it('records every change in the audit trail with the tool as the actor, naming the credential, never its value', async () => {
    let changes: Array<{ action: string; details: Record<string, unknown> }> = [];
    await eventually(async () => {
      const audit = await call<{ entries: Array<{ action: string; details: Record<string, unknown> }> }>((await gatewayUp()).url, 'GET', '/admin/audit?limit=200', { adminToken: ADMIN_TOKEN });
      seen.push(audit.text);
      changes = audit.body.entries.filter((entry) => entry.action.startsWith('admin:credential.'));
      return changes.length >= 4;
    }, 15_000, 'the audit entries of the credential changes');
    expect(changes.map((entry) => entry.action).sort()).toEqual(['admin:credential.create', 'admin:credential.revoke', 'admin:credential.rotate', 'admin:credential.rotate']);
    for (const entry of changes) expect(entry.details).toMatchObject({ actor: 'cli', id });
  }, 120_000);

  it('shows no secret in any output of the tool, the gateway’s logs or the answers', () => {
    const outputs = [...seen, ...gateways.flatMap((gateway) => [gateway.output().stdout, gateway.output().stderr])];
    expect(outputs.join('').length).toBeGreaterThan(1000);
    for (const value of SECRETS) for (const text of outputs) expect(text.includes(value)).toBe(false);
  });
});
