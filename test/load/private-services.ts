import { ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';

/**
 * The suite's own PostgreSQL and Redis, on free loopback ports, so it can restart and stop them
 * without touching the shared ones (scripts/services.sh: 5432 and 6379) other work relies on.
 */

const run = promisify(execFile);

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Debian's PostgreSQL binaries (the newest installed version), as scripts/services.sh finds them. */
function postgresBinaries(): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((name) => /^\d+$/.test(name)) : [];
  if (versions.length === 0) throw new Error(`no PostgreSQL under ${root}: install it (scripts/services.sh up does)`);
  const newest = versions.sort((a, b) => Number(a) - Number(b)).at(-1)!;
  return path.join(root, newest, 'bin');
}

/**
 * A PostgreSQL cluster in a directory of its own, made with initdb and run with pg_ctl. initdb
 * and the server refuse to run as root, so as root both run as the `postgres` user (runuser),
 * which then owns the directory.
 */
export class PrivatePostgres {
  private constructor(
    readonly port: number,
    private readonly home: string,
    private readonly binaries: string,
  ) {}

  private get dataDir(): string {
    return path.join(this.home, 'data');
  }

  private get socketDir(): string {
    return this.home;
  }

  get logFile(): string {
    return path.join(this.home, 'server.log');
  }

  /**
   * Creates the cluster in a temporary directory of its own (the postgres user must reach it)
   * with trust authentication (it listens on loopback only, for this run), and starts it.
   */
  static async start(): Promise<PrivatePostgres> {
    const binaries = postgresBinaries();
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-load-pg-'));
    if (process.getuid?.() === 0) await run('chown', ['postgres:postgres', home]);
    const postgres = new PrivatePostgres(await freePort(), home, binaries);
    await postgres.asOwner('initdb', ['-D', postgres.dataDir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
    await postgres.startServer();
    return postgres;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** `pg_ctl start`, waiting until it accepts connections. */
  async startServer(): Promise<void> {
    const options = [
      `-p ${this.port}`,
      '-c listen_addresses=127.0.0.1',
      `-c unix_socket_directories=${this.socketDir}`,
      '-c max_connections=200',
      '-c shared_buffers=64MB',
    ].join(' ');
    await this.asOwner('pg_ctl', ['-D', this.dataDir, '-l', this.logFile, '-w', '-t', '60', '-o', options, 'start']);
  }

  /** `pg_ctl stop -m fast`: sessions are ended, the server shuts down cleanly. */
  async stopServer(): Promise<void> {
    await this.asOwner('pg_ctl', ['-D', this.dataDir, '-m', 'fast', '-w', '-t', '60', 'stop']);
  }

  /** `pg_ctl restart -m fast`, waiting until it accepts connections again. */
  async restartServer(): Promise<void> {
    await this.asOwner('pg_ctl', ['-D', this.dataDir, '-l', this.logFile, '-m', 'fast', '-w', '-t', '60', 'restart']);
  }

  /** Stops the server at once, whatever it is doing, keeps its log as `keepLogAs`, and removes the cluster (the end of the run). */
  async destroy(keepLogAs: string): Promise<void> {
    if (fs.existsSync(path.join(this.dataDir, 'postmaster.pid'))) {
      await this.asOwner('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', '-t', '30', 'stop']).catch(() => undefined);
    }
    if (fs.existsSync(this.logFile)) fs.copyFileSync(this.logFile, keepLogAs);
    fs.rmSync(this.home, { recursive: true, force: true });
  }

  /** A connection for the suite's own reads of the audit trail. */
  async connect(): Promise<Client> {
    const client = new Client({ connectionString: this.url, connectionTimeoutMillis: 5000 });
    await client.connect();
    return client;
  }

  private async asOwner(binary: string, args: string[]): Promise<void> {
    const command = path.join(this.binaries, binary);
    const asRoot = process.getuid?.() === 0;
    try {
      await run(asRoot ? 'runuser' : command, asRoot ? ['-u', 'postgres', '--', command, ...args] : args, { cwd: '/' });
    } catch (error) {
      const failure = error as { stderr?: string; stdout?: string; message: string };
      throw new Error(`${binary} ${args.at(-1)} failed: ${failure.stderr || failure.stdout || failure.message}`, { cause: error });
    }
  }
}

/** A redis-server child process without persistence, stopped with `redis-cli shutdown` as an operator would. */
export class PrivateRedis {
  private child: ChildProcess | null = null;

  private constructor(
    readonly port: number,
    private readonly logFile: string,
  ) {}

  static async start(scratch: string): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort(), path.join(scratch, 'redis.log'));
    await redis.startServer();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async startServer(): Promise<void> {
    const log = fs.openSync(this.logFile, 'a');
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], {
      stdio: ['ignore', log, log],
    });
    fs.closeSync(log);
    const deadline = Date.now() + 15_000;
    while (!(await this.answers())) {
      if (this.child.exitCode !== null || Date.now() > deadline) throw new Error(`redis-server on ${this.port} did not start: see ${this.logFile}`);
      await sleep(100);
    }
  }

  /** `redis-cli shutdown nosave`, then waits for the process to end. */
  async stopServer(): Promise<void> {
    const child = this.child;
    if (child === null || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await run('redis-cli', ['-h', '127.0.0.1', '-p', String(this.port), 'shutdown', 'nosave']).catch(() => undefined);
    await exited;
    this.child = null;
  }

  /** Kills the process if it still runs (the end of the run). */
  destroy(): void {
    if (this.child !== null && this.child.exitCode === null) this.child.kill('SIGKILL');
    this.child = null;
  }

  private async answers(): Promise<boolean> {
    const reply = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(this.port), 'ping']).catch(() => null);
    return reply !== null && reply.stdout.includes('PONG');
  }
}
