import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { call } from './support/http-client';
import { GatewayProcess, gatewayReady, killGateway, launchGateway } from './support/gateway-process';

/**
 * The embedded database has no authentication, so nothing but its own user may reach it: no
 * TCP port, DATA_DIR private to the user (0700, files 0600), whatever modes the directory and
 * the signing key had before. The gateway runs as `npm start` runs it without DATABASE_URL.
 */

const ADMIN_TOKEN_PATTERN = /adm_[A-Za-z0-9_-]{20,}/;
const TCP_LISTEN = '0A';

const started: GatewayProcess[] = [];
const dirs: string[] = [];

afterAll(async () => {
  for (const gateway of started) await killGateway(gateway);
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** A DATA_DIR as a user's shell makes it (0755), holding a signing key copied in with mode 0644. */
function userMadeDataDir(parent: string): string {
  const dataDir = path.join(parent, 'data');
  fs.mkdirSync(dataDir, { mode: 0o755 });
  fs.chmodSync(dataDir, 0o755);
  const { privateKey } = generateKeyPairSync('ed25519');
  const keyFile = path.join(dataDir, 'signing-key.pem');
  fs.writeFileSync(keyFile, privateKey.export({ format: 'pem', type: 'pkcs8' }));
  fs.chmodSync(keyFile, 0o644);
  return dataDir;
}

async function startEmbedded(dataDir: string): Promise<GatewayProcess> {
  const gateway = await launchGateway({ DATA_DIR: dataDir, POLICIES_FILE: '/dev/null', PDP_GRPC_PORT: '0' });
  started.push(gateway);
  await gatewayReady(gateway);
  return gateway;
}

/** Every entry under `dir` (itself included) whose mode is not owner-only: `path mode` lines. */
function entriesOpenToOthers(dir: string): string[] {
  const found: string[] = [];
  const visit = (entry: string) => {
    const stat = fs.lstatSync(entry);
    const mode = stat.mode & 0o777;
    const expected = stat.isDirectory() ? 0o700 : stat.isFile() ? 0o600 : mode & 0o700;
    if (mode !== expected) found.push(`${path.relative(dir, entry) || '.'} ${mode.toString(8)}`);
    if (stat.isDirectory()) for (const name of fs.readdirSync(entry)) visit(path.join(entry, name));
  };
  visit(dir);
  return found;
}

/**
 * The TCP ports a process listens on, from the kernel's socket tables: each of the process's open
 * sockets (/proc/<pid>/fd) matched by inode to a LISTEN row of /proc/net/tcp and tcp6. Every
 * listener counts, whatever its address or port, so a database served on any port is seen.
 */
function tcpListenPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    const target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`, { encoding: 'utf8' });
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode !== undefined) inodes.add(inode);
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of fs.readFileSync(table, 'utf8').trim().split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[3] === TCP_LISTEN && inodes.has(fields[9])) ports.push(parseInt(fields[1].split(':')[1], 16));
    }
  }
  return ports.sort((a, b) => a - b);
}

describe('the embedded database is reachable by its own user only', () => {
  it('serves no TCP port but HTTP, keeps DATA_DIR owner-only, and the gateway works', async () => {
    const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-private-'));
    dirs.push(parent);
    const dataDir = userMadeDataDir(parent);
    const gateway = await startEmbedded(dataDir);
    const adminToken = ADMIN_TOKEN_PATTERN.exec(gateway.output().stderr)![0];

    const httpPort = Number(new URL(gateway.url).port);
    expect(tcpListenPorts(gateway.child.pid!)).toEqual([httpPort]);

    const agent = await call<{ id: string }>(gateway.url, 'POST', '/admin/agents', { adminToken, body: { name: 'private-bot', trustTier: 'verified' } });
    expect(agent.status).toBe(201);
    const key = await call<{ key: string }>(gateway.url, 'POST', '/admin/api-keys', { adminToken, body: { name: 'adapter' } });
    expect(key.status).toBe(201);
    const check = await call<{ decision: string; decisionId: string }>(gateway.url, 'POST', '/v1/check', {
      headers: { 'x-api-key': key.body.key },
      body: { agentId: agent.body.id, plugin: 'FilePlugin', function: 'ReadFile', arguments: { path: '/tmp/x' } },
    });
    expect(check.status).toBe(200);
    expect(await auditedIds(gateway.url, adminToken, 'check')).toContain(check.body.decisionId);
    expect(await auditedActions(gateway.url, adminToken)).toEqual(expect.arrayContaining(['admin:agent.create', 'admin:apikey.create']));

    // After writes, so files the database created while serving are checked too.
    expect((fs.statSync(dataDir).mode & 0o777).toString(8)).toBe('700');
    expect(entriesOpenToOthers(dataDir)).toEqual([]);
    expect(tcpListenPorts(gateway.child.pid!)).toEqual([httpPort]);
  });

  it('with a DATA_DIR too long for a socket path, serves the database on a private socket elsewhere and removes it at stop', async () => {
    const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-private-'));
    dirs.push(parent);
    const deep = path.join(parent, 'a-directory-name-long-enough-that-the-socket-path', 'would-not-fit-in-sun-path');
    fs.mkdirSync(deep, { recursive: true });
    const dataDir = userMadeDataDir(deep);
    expect(path.join(dataDir, '.s.PGSQL.5432').length).toBeGreaterThan(107);
    const before = new Set(fs.readdirSync(os.tmpdir()));
    const gateway = await startEmbedded(dataDir);
    const adminToken = ADMIN_TOKEN_PATTERN.exec(gateway.output().stderr)![0];

    expect(tcpListenPorts(gateway.child.pid!)).toEqual([Number(new URL(gateway.url).port)]);
    expect((await call(gateway.url, 'POST', '/admin/agents', { adminToken, body: { name: 'deep-bot' } })).status).toBe(201);
    expect(entriesOpenToOthers(dataDir)).toEqual([]);
    const socketDirs = fs.readdirSync(os.tmpdir()).filter((name) => !before.has(name) && name.startsWith('agentgov-db-'));
    expect(socketDirs).toHaveLength(1);
    expect((fs.statSync(path.join(os.tmpdir(), socketDirs[0])).mode & 0o777).toString(8)).toBe('700');

    gateway.child.kill('SIGTERM');
    const exit = await gateway.exit;
    expect([{ code: 0, signal: null }, { code: null, signal: 'SIGTERM' }]).toContainEqual({ code: exit.code, signal: exit.signal });
    expect(fs.existsSync(path.join(os.tmpdir(), socketDirs[0]))).toBe(false);
  });
});

/** The decision ids the audit trail holds for `source`, polled until there is one (the writer batches). */
async function auditedIds(url: string, adminToken: string, source: string): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const page = await call<{ entries: Array<{ id: string }> }>(url, 'GET', `/admin/audit?source=${source}&limit=100`, { adminToken });
    if (page.body.entries.length > 0 || Date.now() > deadline) return page.body.entries.map((entry) => entry.id);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function auditedActions(url: string, adminToken: string): Promise<string[]> {
  const page = await call<{ entries: Array<{ action: string }> }>(url, 'GET', '/admin/audit?source=admin&limit=100', { adminToken });
  return page.body.entries.map((entry) => entry.action);
}
